"""The CLI is built from ``tools.settings.Settings`` and keeps every flag of the contract (ARCHITECTURE §2).

``FLAGS`` is the parser as it was written by hand before it was built from ``Settings``: each flag's
option strings, destination, action, default, type, choices, metavar and help.
"""

import argparse
import os

import pytest

from graph.run import build_parser, parse_args, settings_options
from tools.settings import Settings

FLAGS = [
    ([], 'task', '_StoreAction', None, None, None, None, 'task folder (reference.py, candidate.py[, task.toml]) or the candidate file'),
    (['--resume'], 'resume', '_StoreAction', None, None, None, 'RUN_DIR', 'continue a killed run from its last completed step'),
    (['--reference'], 'reference', '_StoreAction', None, None, None, None, 'reference file, when TASK is a candidate file'),
    (['--out'], 'out', '_StoreAction', None, None, None, None, 'run folder (default runs/<time>-<name>/; an existing one is never overwritten)'),
    (['--backend'], 'backend', '_StoreAction', None, None, ['auto', 'interpreter', 'cuda', 'npu'], None, None),
    (['--patcher'], 'patcher', '_StoreAction', None, None, ['auto', 'patterns', 'llm'], None, None),
    (['--tolerance-profile'], 'tolerance_profile', '_StoreAction', None, None, ['kernelbench', 'ascend'], None, 'per-dtype tolerances of a target family (tools.compare.tolerance_profiles; default kernelbench)'),
    (['--llm-record'], 'llm_record', '_StoreAction', None, None, None, 'DIR', 'record every LLM request and response into DIR'),
    (['--llm-replay'], 'llm_replay', '_StoreAction', None, None, None, 'DIR', 'answer LLM requests from a --llm-record folder; no server'),
    (['--targets'], 'targets', '_StoreAction', None, None, None, None, 'targets every kernel must compile for, e.g. sm_80,sm_90,gfx942,ascend910b3 (default: the local GPU, else sm_90; none to skip)'),
    (['--max-iterations'], 'max_iterations', '_StoreAction', None, 'int', None, None, 'attempt cap (default 8)'),
    (['--max-evaluations'], 'max_evaluations', '_StoreAction', None, 'int', None, None, 'sandboxed evaluation processes (default 40)'),
    (['--token-budget'], 'token_budget', '_StoreAction', None, 'int', None, None, 'LLM tokens before abort'),
    (['--time-budget'], 'time_budget', '_StoreAction', None, 'float', None, None, 'wall-clock seconds before abort (default 1800)'),
    (['--timeout'], 'timeout', '_StoreAction', None, 'float', None, None, 'seconds per sandboxed evaluation (default 60)'),
    (['--suite-budget'], 'suite_budget', '_StoreAction', None, 'float', None, None, 'seconds one search-suite evaluation may take; slower passing variants move to the held-out part (default 20; 0: no limit)'),
    (['--check'], 'check', '_StoreTrueAction', False, None, None, None, 'evaluate and audit the candidate as it is; no repair'),
    (['--review'], 'review', '_StoreTrueAction', False, None, None, None, 'show each patch before it is applied and ask accept / reject / edit on stdin'),
    (['--json'], 'json', '_StoreTrueAction', False, None, None, None, 'print report.json on stdout'),
    (['--unsafe-no-sandbox'], 'unsafe_no_sandbox', '_StoreTrueAction', False, None, None, None, 'run candidates without the OS sandbox where the kernel refuses namespaces (unsafe)'),
    (['--accept-declared-limits'], 'accept_declared_limits', '_StoreTrueAction', False, None, None, None, '--check: a clean exception on a derived input is a declared limit, not a failure'),
    (['--quiet'], 'quiet', '_StoreTrueAction', False, None, None, None, 'no progress on stderr'),
    (['--debug'], 'debug', '_StoreTrueAction', False, None, None, None, 'show tracebacks of internal errors'),
]


def _actions(parser: argparse.ArgumentParser) -> list[tuple]:
    return [(a.option_strings, a.dest, type(a).__name__, a.default, a.type.__name__ if a.type else None, a.choices,
             a.metavar, a.help) for a in parser._actions if a.dest != "help"]


def test_every_flag_keeps_its_spelling_type_default_and_help():
    got = _actions(build_parser())
    assert sorted(got, key=repr) == sorted(FLAGS, key=repr)


def test_a_help_default_follows_the_settings_default(monkeypatch):
    field = Settings.__dataclass_fields__["max_iterations"]
    monkeypatch.setattr(field, "default", 12)
    helps = {a.dest: a.help for a in build_parser()._actions}
    assert helps["max_iterations"] == "attempt cap (default 12)"


def test_flags_given_become_the_graph_options_and_settings(tmp_path):
    args = parse_args(["task", "--max-iterations", "3", "--time-budget", "9.5", "--backend", "interpreter", "--check",
                       "--llm-record", str(tmp_path / "rec"), "--tolerance-profile", "ascend"])
    opts = settings_options(args)
    assert opts == {"max_iterations": 3, "time_budget": 9.5, "backend": "interpreter", "check": True,
                    "llm_record": os.path.abspath(tmp_path / "rec"), "tolerance_profile": "ascend"}
    s = Settings.from_options(opts)
    assert (s.max_iterations, s.time_budget, s.backend, s.check, s.tolerance_profile) == (3, 9.5, "interpreter",
                                                                                        True, "ascend")
    assert s.max_evaluations == 40 and settings_options(parse_args(["task"])) == {}


def test_a_bad_value_is_a_usage_error():
    with pytest.raises(SystemExit) as e:
        parse_args(["task", "--max-iterations", "many"])
    assert e.value.code == 2


@pytest.mark.parametrize("name,field", [("NEARMISS_LEARN", "learn"), ("NEARMISS_EMBED_PRELOAD", "embed_preload")])
def test_environment_knobs_are_settings(monkeypatch, name, field):
    monkeypatch.delenv(name, raising=False)
    assert getattr(Settings(), field) is True
    monkeypatch.setenv(name, "0")
    assert getattr(Settings(), field) is False
    monkeypatch.setenv(name, "1")
    assert getattr(Settings(), field) is True


def test_learning_off_records_nothing():
    from kb import learn

    class NoStore:
        def add_learned(self, entry):
            raise AssertionError("learning is off: the store must not be written")

    patch = {"operator": "mask_fix", "params": {}, "description": "", "diff": ""}
    assert learn.record(patch, {"symptoms": ["tail_only"]}, "x = 1\n", store=NoStore(), enabled=False) is None
