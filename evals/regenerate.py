"""Regenerate baseline: ask the same model for a fresh ``ModelNew`` k times per case, beside Debug Pass@1.

Each generation gets the reference and the failing candidate's error summary (from the
debug run's triage), must answer with a whole file, and is evaluated with the project's
own sandboxed runner and audit (``python -m graph.run TASK --check``: the same suite,
held-out part and integrity checks as a repair). A generation succeeds when that exits 0
(``already_correct``).

Figures (per method, over cases):
- Regenerate Pass@1: mean over cases of (successes / k), the unbiased estimator of
  Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1) at n = k, k' = 1.
- Regenerate Pass@k: fraction of cases with at least one success among the k (same estimator at k' = n).
- tokens per success: all tokens the method spent (failures included) / successes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from agents.prompts import template
from tools.llm.client import LLMCallError, call, config_from_env, make_chat_model
from tools.llm.patch import regenerate_messages
from tools.llm.search_replace import whole_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def regenerate_case(case_dir: str, work: str, error: str, k: int, model, extra: list[str], timeout: float) -> dict:
    """Generate and evaluate ``k`` fresh candidates for one case.

    Args:
        model: a chat model, or a list of ``k`` (one per generation, e.g. distinct sampling seeds).

    Returns:
        ``{"case", "k", "successes", "tokens", "wall_s", "generations": [{"status", "tokens", "error",
        "wall_s"}]}``; ``wall_s`` counts the model call and the evaluation, in seconds.
    """
    models = model if isinstance(model, list) else [model] * k
    name = os.path.basename(case_dir.rstrip("/"))
    with open(os.path.join(case_dir, "reference.py")) as f:
        reference = f.read()
    messages = regenerate_messages(template("regenerate_system"), template("regenerate_user"),
                                   reference=reference, error=error)
    gens = []
    for i in range(k):
        g = {"tokens": 0, "status": "no_answer", "error": ""}
        t0 = time.monotonic()
        try:
            res = call(models[i], messages)
        except LLMCallError as e:
            g.update(error=str(e), wall_s=round(time.monotonic() - t0, 1))
            gens.append(g)
            continue
        g.update(tokens=res.total_tokens, prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens,
                 usage_source=res.usage_source)
        source = whole_file(res.text)
        if source is None:
            g.update(status="no_file", error="the answer holds no python block defining ModelNew",
                     wall_s=round(time.monotonic() - t0, 1))
            gens.append(g)
            continue
        task = os.path.join(work, f"regen-{name}-{i}")
        os.makedirs(task)
        shutil.copy(os.path.join(case_dir, "reference.py"), task)
        with open(os.path.join(task, "candidate.py"), "w") as f:
            f.write(source)
        try:
            p = subprocess.run([sys.executable, "-m", "graph.run", task, "--check", "--quiet", "--json",
                                "--out", task + "-run", *extra], cwd=ROOT, capture_output=True, text=True,
                               timeout=timeout)
            rep = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
            g["status"] = rep.get("status", "error") if p.returncode != 2 else "invalid_input"
            g["exit"] = p.returncode
            if p.returncode != 0:
                g["error"] = (rep.get("reason") or p.stderr.strip()[-200:])[:200]
        except subprocess.TimeoutExpired:
            g["status"] = "timeout"
        g["wall_s"] = round(time.monotonic() - t0, 1)
        gens.append(g)
    ok = sum(g["status"] == "already_correct" and g.get("exit") == 0 for g in gens)
    return {"case": name, "k": k, "successes": ok, "tokens": sum(g["tokens"] for g in gens),
            "wall_s": round(sum(g.get("wall_s", 0.0) for g in gens), 1), "generations": gens}


def summarise(debug_rows: list[dict], regen_rows: list[dict], k: int, patcher: str | None) -> dict:
    """Debug Pass@1 and tokens per success beside Regenerate Pass@1 (mean over k), Pass@k and tokens per success."""
    n = len(regen_rows) or 1
    d_ok = sum(r["status"] == "repaired" and r["exit"] == 0 for r in debug_rows)
    d_tok = sum(r.get("tokens") or 0 for r in debug_rows)
    r_ok = sum(r["successes"] for r in regen_rows)
    r_tok = sum(r["tokens"] for r in regen_rows)
    return {
        "k": k, "cases": len(regen_rows), "patcher": patcher or "patterns",
        "debug": {"pass_at_1": d_ok / n, "successes": d_ok, "tokens": d_tok,
                  "tokens_per_success": d_tok / d_ok if d_ok else None},
        "regenerate": {"pass_at_1": sum(r["successes"] / r["k"] for r in regen_rows) / n,
                       "pass_at_k": sum(r["successes"] > 0 for r in regen_rows) / n, "successes": r_ok,
                       "tokens": r_tok, "tokens_per_success": r_tok / r_ok if r_ok else None},
    }


def markdown_table(s: dict) -> str:
    """The comparison as one markdown table."""
    def tps(x):
        return "n/a (no success)" if x is None else f"{x:,.0f}"

    d, r = s["debug"], s["regenerate"]
    return "\n".join([
        f"| method ({s['cases']} cases) | Pass@1 | Pass@{s['k']} | tokens | successes | tokens per success |",
        "|---|---|---|---|---|---|",
        f"| Debug (--patcher {s['patcher']}) | {d['pass_at_1']:.3f} | | {d['tokens']:,} | {d['successes']} | "
        f"{tps(d['tokens_per_success'])} |",
        f"| Regenerate (k={s['k']}) | {r['pass_at_1']:.3f} | {r['pass_at_k']:.3f} | {r['tokens']:,} | "
        f"{r['successes']} | {tps(r['tokens_per_success'])} |",
    ])


def plot(s: dict, path: str) -> None:
    """Bar charts of Pass@1 / Pass@k and tokens per success (PNG, matplotlib Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d, r = s["debug"], s["regenerate"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.6))
    labels = ["Debug Pass@1", "Regen Pass@1", f"Regen Pass@{s['k']}"]
    a.bar(labels, [d["pass_at_1"], r["pass_at_1"], r["pass_at_k"]], color=["tab:green", "tab:gray", "tab:gray"])
    a.set_ylim(0, 1)
    a.set_title(f"Pass rate ({s['cases']} cases)")
    tps = [d["tokens_per_success"] or 0, r["tokens_per_success"] or 0]
    b.bar(["Debug", f"Regenerate (k={s['k']})"], tps, color=["tab:green", "tab:gray"])
    b.set_title("Tokens per success (0: no success)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def compare(cases: str, names: list[str], debug_rows: list[dict], work: str, k: int, extra: list[str],
            timeout: float, out_json: str, patcher: str | None, console) -> int:
    """Run the regenerate baseline on ``names`` and print/write the comparison with the debug rows.

    Writes ``<out>.md``, ``<out>.png`` and the figures into ``out_json`` (beside the debug rows).

    Returns:
        0, or 2 when the LLM endpoint is not configured (one line on stderr).
    """
    from tools.llm.client import LLMConfigError

    try:
        cfg = config_from_env(timeout_s=float(os.environ.get("NEARMISS_LLM_TIMEOUT", 120)),
                              max_retries=int(os.environ.get("NEARMISS_LLM_MAX_RETRIES", 2)),
                              max_tokens=int(os.environ.get("NEARMISS_LLM_MAX_TOKENS", 4096)))
    except LLMConfigError as e:
        print(f"error: --mode regenerate: {e}", file=sys.stderr)
        return 2
    model = make_chat_model(cfg)
    regen = []
    for name, _row in zip(names, debug_rows):
        error = _error_summary(os.path.join(work, "out-" + name, "report.json"))
        regen.append(regenerate_case(os.path.join(cases, name), work, error, k, model, extra, timeout))
        console.print(f"{name}: regenerate {regen[-1]['successes']}/{k}", style="dim")
    s = summarise(debug_rows, regen, k, patcher)
    table = markdown_table(s)
    print(table)
    stem = os.path.splitext(out_json)[0]
    with open(stem + ".md", "w") as f:
        f.write(table + "\n")
    plot(s, stem + ".png")
    with open(out_json) as f:
        data = json.load(f)
    data.update(compare=s, regenerate_rows=regen, model=cfg.model)
    with open(out_json, "w") as f:
        json.dump(data, f, indent=1)
    console.print(f"wrote {stem}.md, {stem}.png", style="dim")
    return 0


def _error_summary(report_path: str) -> str:
    """The failing candidate's triage summary and findings from a debug run's report (empty if none)."""
    try:
        with open(report_path) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        return ""
    tri = rep.get("triage") or {}
    findings = (rep.get("diagnosis") or {}).get("findings", [])[:6]
    return "\n".join([f"{tri.get('classification', '')}: {tri.get('summary', '')}"] + [f"- {x}" for x in findings])


# --- --mode compare: Debug (offline engine, then the model) against Regenerate, Pass@1..k, per success ----------

#: Sampling temperature of the regenerate arm in --mode compare: Pass@k needs distinct samples (Chen et al. 2021
#: sample at T = 0.2 for pass@1 and 0.8 for pass@100; we use 0.8 for k <= 10, a choice, not a tuned value).
REGEN_TEMPERATURE = 0.8


def pass_at(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` successes among ``n`` samples.

    ``1 - C(n-c, k) / C(n, k)``: Chen et al. 2021, "Evaluating Large Language Models Trained on
    Code", eq. 1 (numerically stable product form of their Figure 3).

    Raises:
        ValueError: ``k`` is not in ``1..n`` or ``c`` not in ``0..n``.
    """
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def _debug_arm(rows: list[dict], patcher: str) -> dict:
    """Pass@1, totals and per-success figures of one Debug arm (one run per case)."""
    n = len(rows) or 1
    ok = sum(r["status"] == "repaired" and r["exit"] == 0 for r in rows)
    tok = sum(r.get("tokens") or 0 for r in rows)
    wall = sum(r.get("wall_s") or 0.0 for r in rows)
    return {"patcher": patcher, "pass_at_1": ok / n, "successes": ok, "runs": len(rows), "tokens": tok,
            "wall_s": round(wall, 1), "tokens_per_success": tok / ok if ok else None,
            "wall_per_success_s": wall / ok if ok else None}


def compare_summary(debug_rows: list[dict], regen_rows: list[dict], k: int, model: str,
                    llm_rows: list[dict] | None = None) -> dict:
    """The comparison figures of both arms over the same cases.

    Debug is one run per case (greedy, deterministic), so its Pass@1 is the success fraction and
    it has no Pass@k. Regenerate's Pass@j (j = 1..k) is the mean over cases of ``pass_at(k, c, j)``.
    Per success: all tokens (prompt + completion, as the server reported them, failures included)
    and all wall seconds of the arm, divided by its successes (None without success).
    ``llm_rows`` (optional): a second Debug arm, ``--patcher llm`` (the model alone, no offline
    engine), summarised the same way under ``debug_llm``.
    """
    n = len(regen_rows) or 1
    r_ok = sum(r["successes"] for r in regen_rows)
    r_tok = sum(r["tokens"] for r in regen_rows)
    r_wall = sum(r.get("wall_s") or 0.0 for r in regen_rows)
    out = {"debug_llm": _debug_arm(llm_rows, "llm")} if llm_rows else {}
    return {
        "k": k, "cases": len(regen_rows), "model": model, **out,
        "debug": _debug_arm(debug_rows, "auto"),
        "regenerate": {"temperature": REGEN_TEMPERATURE,
                       "pass_at": {str(j): sum(pass_at(r["k"], r["successes"], j) for r in regen_rows) / n
                                   for j in range(1, k + 1)},
                       "successes": r_ok, "generations": sum(r["k"] for r in regen_rows), "tokens": r_tok,
                       "wall_s": round(r_wall, 1), "tokens_per_success": r_tok / r_ok if r_ok else None,
                       "wall_per_success_s": r_wall / r_ok if r_ok else None},
    }


def compare_table(s: dict) -> str:
    """Markdown: one row per arm, columns Pass@1..Pass@k, tokens and wall per success, raw totals."""
    def per(x, unit=""):
        return "n/a (no success)" if x is None else f"{x:,.0f}{unit}"

    k, r = s["k"], s["regenerate"]
    head = (["method"] + [f"Pass@{j}" for j in range(1, k + 1)]
            + ["successes / runs", "tokens per success", "wall per success", "tokens (all)", "wall (all)"])
    arms = [("Debug (offline engine, then the model)", s["debug"])]
    if s.get("debug_llm"):
        dl = s["debug_llm"]
        arms.append(("Debug, model only (--patcher llm)" +
                     (f", {dl['runs']} of {s['cases']} cases" if dl["runs"] != s["cases"] else ""), dl))
    rows = [
        [label, f"{d['pass_at_1']:.3f}"] + ["-"] * (k - 1) +
        [f"{d['successes']} / {d['runs']}", per(d["tokens_per_success"]), per(d["wall_per_success_s"], " s"),
         f"{d['tokens']:,}", f"{d['wall_s']:,.0f} s"] for label, d in arms
    ] + [
        [f"Regenerate (k={k}, T={r['temperature']})"] + [f"{r['pass_at'][str(j)]:.3f}" for j in range(1, k + 1)] +
        [f"{r['successes']} / {r['generations']}", per(r["tokens_per_success"]), per(r["wall_per_success_s"], " s"),
         f"{r['tokens']:,}", f"{r['wall_s']:,.0f} s"],
    ]
    planned = s.get("cases_planned", s["cases"])
    scope = f"{s['cases']} cases" if planned == s["cases"] else f"{s['cases']} of {planned} cases (the run was stopped)"
    lines = [f"Model `{s['model']}`, {scope}.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(x) + " |" for x in rows])


def compare_plot(s: dict, path: str) -> None:
    """PNG (matplotlib Agg): Pass@j of both arms, tokens per success, wall per success."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k, d, r = s["k"], s["debug"], s["regenerate"]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(12, 3.6))
    js = list(range(1, k + 1))
    a.plot(js, [r["pass_at"][str(j)] for j in js], "o-", color="tab:gray", label="Regenerate")
    a.plot([1], [d["pass_at_1"]], "s", color="tab:green", markersize=9, label="Debug")
    dl = s.get("debug_llm")
    if dl:
        a.plot([1], [dl["pass_at_1"]], "^", color="tab:blue", markersize=9, label="Debug, model only")
    a.set_xticks(js)
    a.set_ylim(-0.02, 1.02)
    a.set_xlabel("k")
    a.set_title(f"Pass@k ({s['cases']} cases)")
    a.legend()
    for ax, key, title in ((b, "tokens_per_success", "Tokens per success"),
                           (c, "wall_per_success_s", "Wall seconds per success")):
        labels, vals, colors = ["Debug", "Regenerate"], [d[key], r[key]], ["tab:green", "tab:gray"]
        if dl:
            labels.insert(1, "Debug,\nmodel only")
            vals.insert(1, dl[key])
            colors.insert(1, "tab:blue")
        ax.bar(labels, [v or 0 for v in vals], color=colors)
        top = max([v or 0 for v in vals] + [1])
        ax.set_ylim(0, top * 1.15)
        for i, v in enumerate(vals):
            ax.text(i, top * 0.02, "no success" if v is None else f"{v:,.0f}", ha="center", va="bottom", fontsize=9)
        ax.set_title(title)
    fig.suptitle(s["model"], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def compare_run(cases: str, names: list[str], work: str, k: int, extra: list[str], timeout: float, out_json: str,
                console, jobs: int = 1, model_only: bool = False, model_only_extra: list[str] | None = None) -> int:
    """``--mode compare``: per case, Debug (``--patcher auto``), then ``k`` regenerations, then optionally Debug
    with the model alone (``--patcher llm``); ``jobs`` cases at a time.

    The regenerate arm samples at ``REGEN_TEMPERATURE`` with seed ``i`` for generation ``i``
    (distinct, reproducible samples) and gets the error summary of the case's Debug run. With
    ``jobs`` > 1 the cases run in threads (each stage a subprocess or a server call), so one
    case's evaluation overlaps another's generation; what each run measures is unchanged, but
    its wall seconds include waiting for the shared CPU and the single-slot server. After every
    case the figures so far are written (``<out>.md``, ``<out>.png``, ``out_json`` with
    ``compare``, ``rows``, ``regenerate_rows`` and ``debug_llm_rows``), so a stopped run keeps
    the cases it finished.

    Returns:
        0, or 2 when the LLM endpoint is not configured (one line on stderr).
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from evals.bench import run_case
    from tools.llm.client import LLMConfigError

    try:
        cfg = config_from_env(timeout_s=float(os.environ.get("NEARMISS_LLM_TIMEOUT", 120)),
                              max_retries=int(os.environ.get("NEARMISS_LLM_MAX_RETRIES", 2)),
                              max_tokens=int(os.environ.get("NEARMISS_LLM_MAX_TOKENS", 2048)))
    except LLMConfigError as e:
        print(f"error: --mode compare: {e}", file=sys.stderr)
        return 2
    models = [make_chat_model(cfg, temperature=REGEN_TEMPERATURE, seed=i) for i in range(k)]
    done: dict[str, tuple[dict, dict, dict | None]] = {}
    lock = threading.Lock()
    t_start = time.monotonic()
    llm_work = os.path.join(work, "model-only")
    os.makedirs(llm_work, exist_ok=True)

    def one(name: str) -> None:
        case = os.path.join(cases, name)
        row = run_case(case, work, extra + ["--patcher", "auto"], timeout)
        error = _error_summary(os.path.join(work, "out-" + name, "report.json"))
        regen = regenerate_case(case, work, error, k, models, extra, timeout)
        llm_row = run_case(case, llm_work, extra + (model_only_extra or []) + ["--patcher", "llm"], timeout) \
            if model_only else None
        with lock:
            done[name] = (row, regen, llm_row)
            console.print(f"{name}: debug {row['status']} ({row['wall_s']} s, {row.get('tokens', 0)} tokens); "
                          f"regenerate {regen['successes']}/{k} ({regen['wall_s']} s, {regen['tokens']} tokens)"
                          + (f"; model only {llm_row['status']} ({llm_row['wall_s']} s, {llm_row.get('tokens', 0)} "
                             "tokens)" if llm_row else ""), style="dim")
            _write_compare(names, done, k, cfg.model, out_json, jobs, time.monotonic() - t_start)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        for f in [ex.submit(one, n) for n in names]:
            f.result()
    table = _write_compare(names, done, k, cfg.model, out_json, jobs, time.monotonic() - t_start)
    print(table)
    stem = os.path.splitext(out_json)[0]
    console.print(f"wrote {stem}.md, {stem}.png, {out_json}", style="dim")
    return 0


def _write_compare(names: list[str], done: dict, k: int, model: str, out_json: str, jobs: int,
                   elapsed: float) -> str:
    """Write the figures over the finished cases (in ``names`` order); returns the markdown table."""
    fin = [n for n in names if n in done]
    rows = [done[n][0] for n in fin]
    regen = [done[n][1] for n in fin]
    llm_rows = [done[n][2] for n in fin if done[n][2] is not None]
    s = compare_summary(rows, regen, k, model, llm_rows or None)
    s.update(jobs=jobs, elapsed_s=round(elapsed, 1), cases_planned=len(names))
    table = compare_table(s)
    stem = os.path.splitext(out_json)[0]
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    with open(stem + ".md", "w") as f:
        f.write(table + "\n")
    compare_plot(s, stem + ".png")
    data = {"compare": s, "rows": rows, "regenerate_rows": regen, "debug_llm_rows": llm_rows,
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    with open(out_json + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(out_json + ".tmp", out_json)
    return table


def model_only_run(cases: str, names: list[str], extra: list[str], timeout: float, out_json: str, jobs: int,
                   console) -> int:
    """Debug with the model alone (``graph.run --patcher llm``, no offline engine) on ``names``; ``jobs`` at a time.

    Writes ``{"rows", "model", "extra", "date"}`` to ``out_json`` after every case (the rows of
    ``evals.bench.run_case``, in ``names`` order, finished cases only), so a stopped run keeps them.

    Returns:
        0, or 2 when the LLM endpoint is not configured (one line on stderr).
    """
    import tempfile
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from evals.bench import run_case
    from tools.llm.client import LLMConfigError

    try:
        cfg = config_from_env()
    except LLMConfigError as e:
        print(f"error: model-only: {e}", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="nearmiss-model-only-")
    done: dict[str, dict] = {}
    lock = threading.Lock()

    def one(name: str) -> None:
        row = run_case(os.path.join(cases, name), work, extra + ["--patcher", "llm"], timeout)
        with lock:
            done[name] = row
            console.print(f"{name}: model only {row['status']} ({row['wall_s']} s, {row.get('tokens', 0)} tokens)",
                          style="dim")
            data = {"rows": [done[n] for n in names if n in done], "model": cfg.model, "extra": extra,
                    "cases_planned": len(names), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
            with open(out_json + ".tmp", "w") as f:
                json.dump(data, f, indent=1)
            os.replace(out_json + ".tmp", out_json)

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            for fut in [ex.submit(one, n) for n in names]:
                fut.result()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def merge_model_only(compare_json: str, model_only_json: str, model: str | None = None) -> str:
    """Add the rows of ``model_only_run`` as the ``debug_llm`` arm of a written comparison; rewrite its md/png/json.

    ``model`` names the model of a rows file that does not record it (``evals.bench --patcher llm``
    output); a file that records one must match the comparison's. Without a rows file
    (``model_only_json`` None) the comparison is only rendered again.

    Returns:
        The markdown table.

    Raises:
        ValueError: the model-only rows name a case the comparison does not hold, or another model.
    """
    with open(compare_json) as f:
        data = json.load(f)
    mo = {"rows": data.get("debug_llm_rows") or [], "model": data["compare"]["model"]}
    if model_only_json:
        with open(model_only_json) as f:
            mo = json.load(f)
    s = data["compare"]
    cases = {r["case"] for r in data["rows"]}
    extra = [r["case"] for r in mo["rows"] if r["case"] not in cases]
    if extra:
        raise ValueError(f"{model_only_json}: cases not in {compare_json}: {', '.join(extra)}")
    if (mo.get("model") or model) != s["model"]:
        raise ValueError(f"{model_only_json}: model {mo.get('model')!r}, the comparison used {s['model']!r}")
    new = compare_summary(data["rows"], data["regenerate_rows"], s["k"], s["model"], mo["rows"] or None)
    new.update({k: v for k, v in s.items() if k not in new})
    if mo["rows"] and model_only_json:
        new["debug_llm"].update(extra=mo.get("extra"), command=mo.get("command"), source=model_only_json)
    elif mo["rows"]:  # rendered again: keep where the rows came from
        new["debug_llm"].update({k: v for k, v in (s.get("debug_llm") or {}).items() if k not in new["debug_llm"]})
    data.update(compare=new, debug_llm_rows=mo["rows"])
    table = compare_table(new)
    stem = os.path.splitext(compare_json)[0]
    with open(stem + ".md", "w") as f:
        f.write(table + "\n")
    compare_plot(new, stem + ".png")
    with open(compare_json, "w") as f:
        json.dump(data, f, indent=1)
    return table


def main(argv: list[str] | None = None) -> int:
    """Command line: ``model-only --cases DIR --out X.json [--jobs N] [--extra ARGS]`` or ``merge CMP.json MO.json``.

    Returns:
        The exit status: 0, or 2 when the LLM endpoint is not configured.
    """
    import argparse

    from rich.console import Console

    ap = argparse.ArgumentParser(prog="python -m evals.regenerate")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model-only", help="Debug with --patcher llm alone on every case of --cases")
    m.add_argument("--cases", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--jobs", type=int, default=1)
    m.add_argument("--timeout", type=float, default=900)
    m.add_argument("--extra", default="", help="arguments passed to graph.run")
    g = sub.add_parser("merge", help="add a model-only run to a --mode compare result as its own row, or (without "
                                     "it) render the result's md/png again")
    g.add_argument("compare_json")
    g.add_argument("model_only_json", nargs="?")
    g.add_argument("--model", help="the model of a rows file that does not name it")
    a = ap.parse_args(argv)
    if a.cmd == "merge":
        print(merge_model_only(a.compare_json, a.model_only_json, a.model))
        return 0
    names = sorted(d for d in os.listdir(a.cases) if os.path.isdir(os.path.join(a.cases, d)))
    return model_only_run(a.cases, names, a.extra.split(), a.timeout, a.out, a.jobs, Console())


if __name__ == "__main__":
    sys.exit(main())
