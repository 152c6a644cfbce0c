"""The judge's command line, its JSON output, hints, watch mode and notebook check()."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader.records import CaseStatus, ProblemStatus
from grader import cli, hints, notebook, report, runner

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def run_judge(*args, entry="practice/judge.py", cwd=None, timeout=120):
    return subprocess.run([PY, str(ROOT / entry), *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=timeout)


WRONG_P4 = '''
def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = n_new * n_ctx
    e = n_ctx * 2 * d_latent * n_heads * (d_nope + d_v) + pairs * 2 * n_heads * (d_nope + d_rope + d_v)
    a = n_new * 2 * n_heads * d_latent * (d_nope + d_v) + pairs * 2 * n_heads * (2 * d_latent + d_rope)
    return {"expand": e, "absorb": a}

def choose_path(n_new, n_ctx, **shapes):
    f = attention_flops(n_new, n_ctx, **shapes)
    return "expand" if f["expand"] < f["absorb"] else "absorb"
'''


@pytest.mark.smoke
def test_solutions_check_passes_and_reports_time(course_copy):
    t0 = time.monotonic()  # a copy of the course: practice/ as committed, not the learner's
    r = subprocess.run([PY, str(course_copy / "judge.py"), "--solutions", "--seed", "3"],
                       capture_output=True, text=True, cwd=course_copy, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(runner.discover())
    assert re.search(rf"OK: {n} problems checked in [\d.]+ s", r.stdout), r.stdout
    assert r.stdout.count("stub not started") + r.stdout.count("unavailable") >= n
    print(f"--solutions for {n} problems took {took:.1f} s")


@pytest.mark.smoke
def test_file_exit_codes(tmp_path, capsys):
    wrong = tmp_path / "mine.py"
    wrong.write_text(WRONG_P4)
    # the real entry point, run from another directory
    ok = run_judge("4", "--file", str(ROOT / "solutions" / "p04_choose_path.py"), cwd=tmp_path)
    assert ok.returncode == 0 and "PASSED" in ok.stdout
    bad = run_judge("choose_path", "--file", str(wrong), cwd=tmp_path)
    assert bad.returncode == 1
    assert "non-causal" in bad.stdout and "First failure" in bad.stdout
    # usage errors: exit code 2 and a sentence saying what to do
    assert cli.main(["4", "--file", str(tmp_path / "nope.py")]) == 2
    assert cli.main(["--file", str(wrong)]) == 2  # the file name does not say which problem
    assert cli.main(["no_such_problem"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "name it" in err and "known problems" in err


def test_json_shape(tmp_path):
    wrong = tmp_path / "p04_choose_path.py"  # the file name names the problem
    wrong.write_text(WRONG_P4)
    out = tmp_path / "results.json"
    r = run_judge("--file", str(wrong), "--json", "--seed", "5", "--output", str(out), cwd=tmp_path)
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert json.loads(out.read_text()) == data
    assert data["version"] == 3 and data["status"] == "fail"
    assert data["score"] == 0 and data["max_score"] == 1 and data["seed"] == 5
    (t,) = data["tests"]
    assert t["name"] == "p04 choose_path" and t["status"] == "fail" and t["task_id"] == 4
    assert "non-causal" in t["message"] and t["score"] == 0 and t["max_score"] == 1
    assert set(t) >= {"name", "status", "message", "output", "test_code"}


def test_json_for_a_stub(capsys):
    rc = cli.main(["1", "--json", "--seed", "1"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and data["version"] == 3 and data["status"] == "fail"
    assert data["score"] == 0 and data["max_score"] == 1
    assert data["tests"][0]["message"].startswith("not started")


@pytest.mark.smoke
def test_grade_all_lines_and_summary(capsys):
    rc = cli.main(["--seed", "2"])
    out = capsys.readouterr().out
    n = len(runner.discover())
    # a progress report: exit code 0 although nothing is solved (a learner's first run)
    assert rc == 0 and "Summary: passed 0" in out and f"(of {n} problems)" in out
    assert cli.main(["--seed", "2", "--strict"]) == 1  # CI-style: fails until all pass
    assert "Next: problem 1 (kv_cache_bytes)" in out


def test_hints_are_revealed_one_at_a_time(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(hints, "_folder", tmp_path)
    assert cli.main(["4", "--hint"]) == 0
    first = capsys.readouterr().out
    assert "1 of 4" in first and "  2." not in first
    cli.main(["choose_path", "--hint"])
    second = capsys.readouterr().out
    assert "2 of 4" in second and "  1." in second and "  2." in second
    assert (tmp_path / ".judge_hints.txt").read_text() == "choose_path 2\n"
    for _ in range(5):
        cli.main(["4", "--hint"])
    assert "last hint" in capsys.readouterr().out
    assert (tmp_path / ".judge_hints.txt").read_text() == "choose_path 4\n"  # never past the last


@pytest.mark.smoke
def test_one_hint_counter_for_the_command_line_and_check(tmp_path, monkeypatch, capsys):
    """check() in a notebook counts the hints the command line showed (it said "0 of 4")."""
    monkeypatch.setattr(hints, "_folder", tmp_path)
    ns = {}
    exec(WRONG_P4, ns)
    notebook.check(4, namespace=ns)
    assert "(0 of 4 hints shown so far)" in capsys.readouterr().out
    cli.main(["4", "--hint"])
    cli.main(["4", "--hint"])
    capsys.readouterr()
    notebook.check(4, namespace=ns)
    assert "(2 of 4 hints shown so far)" in capsys.readouterr().out
    cli.main(["4", "--hint"])
    cli.main(["4", "--hint"])
    capsys.readouterr()
    notebook.check(4, namespace=ns)
    out = capsys.readouterr().out
    assert "FAILED" in out and "hints shown so far" not in out  # all four seen: no "Stuck?" line


def test_the_hint_counts_skip_unreadable_lines(tmp_path, monkeypatch, capsys):
    """A line that is not "slug count" counts as nothing; the others are kept and rewritten."""
    monkeypatch.setattr(hints, "_folder", tmp_path)
    (tmp_path / ".judge_hints.txt").write_text("garbage line\nchoose_path x\nkv_cache_bytes 1\nchoose_path 2\n")
    assert hints.load() == {"choose_path": 2, "kv_cache_bytes": 1}
    cli.main(["4", "--hint"])
    assert "3 of 4" in capsys.readouterr().out
    assert (tmp_path / ".judge_hints.txt").read_text() == "choose_path 3\nkv_cache_bytes 1\n"


def test_watch_regrades_on_save_and_stops(tmp_path, capsys):
    f = tmp_path / "p04_choose_path.py"
    f.write_text(WRONG_P4)

    def save_fixed():
        time.sleep(0.8)
        f.write_text((ROOT / "solutions" / "p04_choose_path.py").read_text())
        os.utime(f, (time.time() + 5, time.time() + 5))

    threading.Thread(target=save_fixed, daemon=True).start()
    rc = cli.main(["4", "--file", str(f), "--watch", "--watch-minutes", "0.05", "--poll", "0.1"])
    out = capsys.readouterr().out
    assert rc == 0 and "FAILED" in out and "PASSED" in out
    assert out.index("FAILED") < out.index("PASSED") and "Stopped watching" in out


def test_watch_ctrl_c_exits_cleanly(monkeypatch, capsys):
    def interrupt(_):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli.time, "sleep", interrupt)
    assert cli.main(["4", "--watch", "--seed", "1"]) == 0
    assert "Stopped watching." in capsys.readouterr().out


# ------------------------------------------------------------------ notebooks

def _ns():
    ns = {}
    exec((ROOT / "solutions" / "p04_choose_path.py").read_text(), ns)
    return ns


@pytest.mark.smoke
def test_notebook_check_by_keyword_and_namespace(capsys):
    ns = _ns()
    res = notebook.check(4, attention_flops=ns["attention_flops"], choose_path=ns["choose_path"])
    assert res.passed and not res.in_process and res.isolation == "fork"
    assert "PASSED" in capsys.readouterr().out
    assert notebook.check(4, namespace=ns, display=False, isolate=False).in_process
    assert notebook.check("choose_path", namespace=ns, display=False).passed


def test_notebook_check_reports_mistakes_and_missing_functions():
    ns = {}
    exec(WRONG_P4, ns)
    res = notebook.check(4, namespace=ns, display=False)
    assert res.status is ProblemStatus.FAILED and "non-causal" in res.first_failure().mistake
    part = notebook.check(4, attention_flops=_ns()["attention_flops"], display=False)
    assert part.status is ProblemStatus.FAILED
    assert "no function named 'choose_path'" in part.first_failure().message or any(
        "choose_path" in o.message for o in part.outcomes if o.status is CaseStatus.FAIL)
    with pytest.raises(TypeError, match="asks for"):
        notebook.check(4, choose=print)
    html = report.to_html(res)
    assert "FAILED" in html and "&lt;" not in html.split("<pre")[0]


def test_notebook_check_traceback_keeps_cell_frames():
    def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):
        return q_nope @ c_kv  # wrong shapes
    res = notebook.check(8, absorb_decode=absorb_decode, display=False, seed=1)
    msg = res.first_failure().message
    assert "ValueError" in msg and "in absorb_decode" in msg and "child/" not in msg and "run.py" not in msg


def test_notebook_check_catches_expansion_in_process():
    import numpy as np

    def absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):  # expands every head
        k = np.einsum("tc,hcd->htd", c_kv, w_uk)
        v = np.einsum("tc,hcd->htd", c_kv, w_uv)
        s = scale * (np.einsum("hd,htd->ht", q_nope, k) + q_rope @ k_rope.T)
        p = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("ht,htd->hd", p / p.sum(-1, keepdims=True), v)

    res = notebook.check(8, absorb_decode=absorb_decode, display=False, seed=2)
    assert res.status is ProblemStatus.FAILED and "materializes per-head keys" in res.first_failure().message
    ns = {}
    exec((ROOT / "solutions" / "p08_absorb_decode.py").read_text(), ns)
    assert notebook.check(8, namespace=ns, display=False, seed=2).passed


# ---- the first minutes -----------------------------------------------------------------

HEADS_FIXED_P4 = WRONG_P4.replace("pairs = n_new * n_ctx", "pairs = n_new * n_ctx - n_new * (n_new - 1) // 2") \
    .replace("def attention_flops(n_new, n_ctx, n_heads=128,", "def attention_flops(n_new, n_ctx, _n_heads=128,") \
    .replace("    pairs =", "    n_heads = 128  # the slip: V3's head count whatever is passed\n    pairs =", 1)


def test_reproduce_line_keeps_the_file_as_given(tmp_path):
    """A failing hidden case prints a command that grades the SAME file again, with the
    path as the user typed it (text and JSON)."""
    (tmp_path / "mine.py").write_text(HEADS_FIXED_P4)
    r = run_judge("4", "--file", "mine.py", "--seed", "9", cwd=tmp_path)
    assert r.returncode == 1
    assert "hidden case" in r.stdout and "public 8/8" in r.stdout, r.stdout
    assert "Reproduce: python practice/judge.py 4 --file mine.py --seed 9" in r.stdout, r.stdout
    assert "file: mine.py" in r.stdout and "../" not in r.stdout
    j = run_judge("4", "--file", "mine.py", "--seed", "9", "--json", cwd=tmp_path)
    assert "Reproduce: python practice/judge.py 4 --file mine.py --seed 9" in json.loads(j.stdout)["tests"][0]["message"]
    default = runner.grade(runner.find(4), None, seed=9)
    assert report.reproduce(default) == "python practice/judge.py 4 --seed 9"


def test_hint_without_a_problem_asks_for_one(capsys):
    assert cli.main(["--hint"]) == 2
    err = capsys.readouterr().err
    assert "which problem?" in err and "4 --hint" in err and "1 kv_cache_bytes" in err


def test_missing_packages_are_named_in_a_sentence():
    p12 = runner.find(12)
    text = runner.requirement_text(p12, ["torch", "triton"])
    assert "needs torch and triton, which are not installed here" in text
    assert "bash setup.sh" in text and "pip install torch triton" in text
    assert "needs torch, which is not installed" in runner.requirement_text(p12, ["torch"])


def test_without_numpy_the_judge_says_what_to_do_in_one_line():
    code = ("import sys, runpy; sys.modules['numpy'] = None; sys.argv = ['practice/judge.py']; "
            "runpy.run_path('practice/judge.py', run_name='__main__')")
    env = dict(os.environ, MLA_JUDGE_NO_VENV="1")
    r = subprocess.run([PY, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "bash setup.sh" in r.stderr and "source .venv/bin/activate" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def _other_python():
    """A Python that is not this venv's (the system one a learner might type)."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    return base if base.exists() and Path(sys.prefix).resolve() != Path(sys.base_prefix).resolve() else None


@pytest.mark.skipif(_other_python() is None or not (ROOT / ".venv" / "bin" / "python").exists(),
                    reason="needs the course's .venv and another Python")
def test_python_practice_judge_works_from_the_system_python():
    """`python practice/judge.py` typed in a fresh terminal (no venv active) runs the
    judge with the course's .venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "MLA_JUDGE_NO_VENV")}
    r = subprocess.run([str(_other_python()), "practice/judge.py", "--list"], cwd=ROOT,
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert " 1 kv_cache_bytes" in r.stdout and "12 triton_inner_loop" in r.stdout
