"""``--review``: the graph interrupts before each patch is applied; accept, reject and edit resume it."""

import json
import subprocess
import sys

import pytest
from conftest import ROOT, fixture_text
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agents.review import parse_decision
from graph.build import build_graph


def _start(tmp_path, thread="t"):
    app = build_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
    inputs = {"candidate_source": fixture_text("vadd", "candidate.py"),
              "reference_source": fixture_text("vadd", "reference.py"), "name": "vadd",
              "options": {"targets": "none", "out": str(tmp_path / "run"), "review": True}}
    app.invoke(inputs, config)
    return app, config


def _question(app, config):
    """The pending review payload, or None when the run has finished."""
    asks = [i for t in app.get_state(config).tasks for i in t.interrupts]
    assert len(asks) <= 1
    return asks[0].value if asks else None


def test_accept_applies_the_reviewed_patch(tmp_path):
    app, config = _start(tmp_path)
    q = _question(app, config)
    assert q["kind"] == "review_patch" and q["operator"] == "grid_ceil" and q["attempt"] == 1
    assert "+        grid = lambda meta: (triton.cdiv(n" in q["diff"]
    assert not (tmp_path / "run" / "attempts").exists()  # nothing applied before the answer
    out = app.invoke(Command(resume="accept"), config)
    assert set(out) == {"report", "repaired_source"}  # the output schema
    assert _question(app, config) is None
    report = out["report"]
    assert report["status"] == "repaired"
    assert [a["operator"] for a in report["attempts"]] == ["grid_ceil"]
    assert report["reviews"] == [{"attempt": 1, "operator": "grid_ceil", "description": q["description"],
                                  "action": "accept"}]


def test_reject_never_applies_the_patch_and_asks_for_the_next(tmp_path):
    app, config = _start(tmp_path)
    first = _question(app, config)
    app.invoke(Command(resume="maybe"), config)  # not an answer: asked again, with the reason
    again = _question(app, config)
    assert again["operator"] == first["operator"] and "maybe" in again["error"]
    seen = []
    q = again
    while q is not None:
        seen.append(q["operator"])
        assert len(seen) < 20
        out = app.invoke(Command(resume={"action": "reject"}), config)
        q = _question(app, config)
    report = out["report"]
    # After each rejection the patcher proposes another untried edit, if any (which ones partially improve
    # depends on out-of-bounds reads of the interpreter), until none is left.
    assert seen[0] == "grid_ceil" and len(set(seen)) == len(seen)
    assert report["status"] == "not_repaired" and out["repaired_source"] is None
    assert report["attempts"] == [] and report["iterations"] == 0
    assert [r["action"] for r in report["reviews"]] == ["reject"] * len(seen)
    assert not (tmp_path / "run" / "attempts").exists()


def test_edit_runs_the_reviewers_source(tmp_path):
    app, config = _start(tmp_path)
    q = _question(app, config)
    mine = fixture_text("vadd", "fixed.py").replace("BLOCK_SIZE=1024", "BLOCK_SIZE=512")
    out = app.invoke(Command(resume={"action": "edit", "source": mine}), config)
    assert out["report"]["status"] == "repaired" and out["repaired_source"] == mine
    attempt = out["report"]["attempts"][0]
    assert attempt["operator"] == q["operator"] and "edited by the reviewer" in attempt["description"]
    assert (tmp_path / "run" / "attempts" / "01" / "candidate.py").read_text() == mine


@pytest.mark.parametrize("value", ["later", {"action": "edit"}, {"action": "edit", "source": "def ("}, 3])
def test_unusable_decisions_are_refused(value):
    with pytest.raises(ValueError):
        parse_decision(value)


def _cli(*args, stdin=""):
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("EDITOR", "VISUAL")}
    return subprocess.run([sys.executable, "-m", "graph.run", *args], cwd=ROOT, input=stdin, capture_output=True,
                          text=True, timeout=600, env=env)


def test_cli_review_on_stdin_edit_from_a_file_and_resume_a_waiting_review(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "reference.py").write_text(fixture_text("vadd", "reference.py"))
    (task / "candidate.py").write_text(fixture_text("vadd", "candidate.py"))
    out = tmp_path / "run"
    p = _cli(str(task), "--out", str(out), "--targets", "none", "--review", "--json")  # stdin closed at once
    assert p.returncode == 1 and "--resume" in p.stderr and "grid_ceil" in p.stderr and p.stdout == ""
    assert not (out / "report.json").exists()
    # progress comes from the stream: node updates, and custom events from inside triage and the patcher
    assert "triage: suite of" in p.stderr and "patcher: screening edits 1-" in p.stderr

    mine = tmp_path / "mine.py"
    mine.write_text(fixture_text("vadd", "fixed.py").replace("BLOCK_SIZE=1024", "BLOCK_SIZE=256"))
    p = _cli("--resume", str(out), "--json", "--quiet", stdin=f"what\ne\n{tmp_path / 'missing.py'}\ne\n{mine}\n")
    assert p.returncode == 0, p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["status"] == "repaired" and [r["action"] for r in report["reviews"]] == ["edit"]
    assert (out / "repaired.py").read_text() == mine.read_text()
    assert "answer a, r or e" in p.stderr and "cannot read" in p.stderr  # --quiet keeps the review prompts
    assert "judge" not in p.stderr and "auditor" not in p.stderr  # ... and drops the progress


def test_terminal_edit_opens_the_editor_on_a_temp_copy(monkeypatch):
    import io

    from rich.console import Console

    from graph.review import NoAnswer, ask

    source = fixture_text("vadd", "fixed.py")
    payload = {"attempt": 1, "operator": "grid_ceil", "description": "d", "diff": "-a\n+b\n", "source": source}
    shown = io.StringIO()
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "sed -i s/BLOCK_SIZE=1024/BLOCK_SIZE=128/")
    decision = ask(payload, Console(file=shown, width=100), io.StringIO("maybe\ne\n"))
    assert decision == {"action": "edit", "source": source.replace("BLOCK_SIZE=1024", "BLOCK_SIZE=128")}
    assert "answer a, r or e" in shown.getvalue() and "+b" in shown.getvalue()
    assert ask(payload, Console(file=io.StringIO()), io.StringIO("r\n")) == {"action": "reject"}
    with pytest.raises(NoAnswer):
        ask(payload, Console(file=io.StringIO()), io.StringIO(""))
