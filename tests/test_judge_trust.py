"""Every point is decided outside the attempt, and what the attempt sends back is bounded.

Attacks written the way a student who has read the judge's source would write them, each
graded through the real judge in the OS sandbox (grader/jail.py), each with a control:

- the memory rule: a non-chunked answer to problem 6 fails on its budget-bearing case
  however it tries to lift the limits from inside (setrlimit, patching the harness, a
  forked helper), and the model answer passes;
- the read-only rule: arrays cannot be changed in place, even by an attempt that first
  switches off the harness's comparison;
- what crosses back: a 40 MiB exception message, a forged 20 MiB result line, a record of
  millions of items, forged statuses with malformed numbers -- each a clear failure of the
  attempt, and the grading process stays within a stated memory (measured in a fresh
  process: ``GRADER_PEAK_MB``);
- time: an attempt that sleeps just under every case's limit is stopped at its whole
  time budget (grader/plan.py) with "used its whole time budget";
- the seed: nothing the attempt can read holds the run's seed or its problem's stream.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from grader import plan, runner, seeds
from grader.records import MESSAGE_CAP, ProblemStatus
from grader.spec import Case, Problem, compare_arrays
from tests.sandbox_support import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
P6 = runner.find(6)
GRADER_PEAK_MB = 400   # the grading process (the conductor's worker): peak resident memory


@pytest.fixture(autouse=True)
def _sandbox():
    require_sandbox()


def _grade(tmp_path, problem, src, seed=5, name="attempt.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(src))
    return runner.grade(problem, path, seed=seed)


def _reasons(res) -> set:
    return {o.reason for o in res.outcomes if o.status.value == "fail"} | {res.reason} - {None}


# --------------------------------------------------------------------------- memory

WHOLE_PREFIX = (ROOT / "grader/problems/p06_chunked_extend/corpus/wrong_expand_whole_prefix.py").read_text()
LIFTS = {
    "as written": "",
    "setrlimit to infinity": """
        import resource
        for r in (resource.RLIMIT_DATA, resource.RLIMIT_AS):
            try:
                resource.setrlimit(r, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            except (ValueError, OSError):
                pass
        """,
    "patch the harness": """
        import sys
        harness = sys.modules.get("__main__")
        for name in ("set_memory_headroom", "set_rlimits", "_start_tracing", "freeze_arrays"):
            if hasattr(harness, name):
                setattr(harness, name, lambda *a, **k: None)
        if hasattr(harness, "_stop_tracing"):
            harness._stop_tracing = lambda: 0
        """,
}


@pytest.mark.parametrize("lift", list(LIFTS))
def test_a_non_chunked_answer_fails_the_memory_budget_however_it_lifts_it(tmp_path, lift):
    res = _grade(tmp_path, P6, WHOLE_PREFIX + "\n" + textwrap.dedent(LIFTS[lift]))   # the lift runs at import
    long_case = [o for o in res.outcomes if o.case.memory_mb]
    assert long_case and all(o.status.value == "fail" and o.reason == "memory" for o in long_case), \
        [(o.status, o.reason, o.message[:200]) for o in long_case]


def test_memory_in_a_shared_mapping_counts_too(tmp_path):
    """MAP_SHARED memory (an anonymous shared map, a memfd, the tmpfs) is outside
    RLIMIT_DATA: the cgroup's limit, set from outside, holds it."""
    res = _grade(tmp_path, P6, WHOLE_PREFIX.replace("def chunked_extend(", "def _whole(") + """

import mmap
import numpy as np

def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):
    # one head's keys for the whole prefix, in shared memory rather than the heap
    n, d = c_kv.shape[0], w_uk.shape[-1]
    buf = mmap.mmap(-1, n * d * 8)
    keys = np.frombuffer(buf, dtype=np.float64).reshape(n, d)
    np.matmul(c_kv, w_uk[0], out=keys)
    keys[:] += 0.0
    return _whole(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk)
""")
    long_case = [o for o in res.outcomes if o.case.memory_mb]
    assert long_case and all(o.status.value == "fail" and o.reason == "memory" for o in long_case), \
        [(o.reason, o.message[:200]) for o in long_case]


def test_the_model_answer_fits_the_memory_budget(tmp_path):
    res = runner.grade(P6, ROOT / "solutions" / P6.filename, seed=5)
    assert res.passed, res.first_failure().message if res.first_failure() else res.message


def test_a_forked_helper_does_not_get_memory_of_its_own(tmp_path):
    """The work done in a child process: the cgroup (or the inherited hard rlimit) holds it too."""
    res = _grade(tmp_path, P6, WHOLE_PREFIX.replace("def chunked_extend(", "def _whole(") + """

import os, pickle

def chunked_extend(**kwargs):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, pickle.dumps(_whole(**kwargs)))
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 20):
        data += chunk
    os.waitpid(pid, 0)
    return pickle.loads(data)
""")
    long_case = [o for o in res.outcomes if o.case.memory_mb]
    assert all(o.status.value == "fail" for o in long_case)
    assert {o.reason for o in long_case} <= {"memory", "exception"}, [o.message[:300] for o in long_case]


# --------------------------------------------------------------------------- inputs

def test_switching_off_the_comparison_does_not_let_an_array_change(tmp_path):
    res = _grade(tmp_path, runner.find(5), """
        import sys
        import numpy as np
        sys.modules["__main__"].changed_inputs = lambda kept, args: []   # the comparison, off

        def lse_merge(outs, lses):
            lses -= lses.max()              # in place: the judge handed it over read-only
            w = np.exp(lses)
            return (w[..., None] * outs).sum(0) / w.sum(0)[..., None], np.log(w.sum(0))
        """)
    assert res.status is ProblemStatus.FAILED and "mutated_input" in _reasons(res)


# --------------------------------------------------------------------------- what crosses back

def _peak_of_grading(tmp_path, src, number=1) -> tuple[dict, float]:
    """Grade ``src`` in a fresh process; (its result as JSON, that process's peak RSS in MB)."""
    path = tmp_path / "attempt.py"
    path.write_text(textwrap.dedent(src))
    code = textwrap.dedent(f"""
        import json, resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from grader import report, runner

        def peak_mb():
            # VmHWM is this process's own high-water mark. ru_maxrss is not: Linux carries
            # it across fork and exec, so a fresh interpreter reports the pytest process's
            # size at the fork if that was larger.
            try:
                with open("/proc/self/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            return int(line.split()[1]) / 1024
            except OSError:
                pass
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        r = runner.grade(runner.find({number}), {str(path)!r}, seed=3)
        out = report.to_json([r])
        print(json.dumps({{"json": out, "status": str(r.status),
                          "reasons": sorted({{o.reason for o in r.outcomes}} | {{r.reason}} - {{None}}),
                          "longest": max([len(o.message) + len(o.output) for o in r.outcomes] + [len(r.message)]),
                          "peak_mb": peak_mb()}}))
        """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return got, got["peak_mb"]


FORGE = """
    import json, sys

    def _send():
        f = sys._getframe()
        while f is not None and "send" not in f.f_locals:
            f = f.f_back
        return f.f_locals["send"] if f is not None else None

    def kv_cache_bytes(*args, **kwargs):
        send = _send()
        {body}
        return 0
    """
HOSTILE_RECORDS = {
    "a 40 MiB exception message": ("""
        def kv_cache_bytes(*args, **kwargs):
            raise ValueError("x" * (40 << 20))
        """, {"exception"}),
    "a 40 MiB SystemExit": ("""
        import sys
        def kv_cache_bytes(*args, **kwargs):
            sys.exit("y" * (40 << 20))
        """, {"exit"}),
    "a forged 20 MiB result line": (FORGE.format(body='''send({"event": "done", "i": 0, "status": "ok",
                                                      "result": "z" * (20 << 20)})'''), {"too_large"}),
    "a forged record of millions of items": (FORGE.format(body='''send({"event": "done", "i": 0, "status": "ok",
                                                      "result": {"__list__": [0] * 3_000_000}})'''),
                                             {"too_large", "exception"}),
    "a forged timeout with timeout_s 'forever'": (FORGE.format(body='''send({"event": "done", "i": 0,
                                                      "status": "timeout", "timeout_s": "forever"})'''),
                                                  {"exception"}),
    "a forged out-of-memory with a cap of None": (FORGE.format(body='''send({"event": "done", "i": 0,
                                                      "status": "out_of_memory", "cap_mb": None, "code": "x"})'''),
                                                  {"exception"}),
    "a 1 MiB printed line 40 times": ("""
        import os
        def kv_cache_bytes(*args, **kwargs):
            for _ in range(40):
                print("p" * (1 << 20))
                os.write(1, b"q" * (1 << 20))
            return 0
        """, {"wrong_answer", "wrong_type"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE_RECORDS))
def test_what_crosses_back_is_bounded_and_the_attempts_failure(tmp_path, name):
    src, reasons = HOSTILE_RECORDS[name]
    got, peak = _peak_of_grading(tmp_path, src)
    assert got["status"] == "failed", got["status"]
    assert set(got["reasons"]) & reasons, (got["reasons"], reasons)
    assert "judge_error" not in got["reasons"] and "infrastructure" not in got["reasons"]
    assert got["longest"] <= 2 * MESSAGE_CAP + 1000, got["longest"]
    assert len(json.dumps(got["json"])) < 64 * 1024 * len(runner.find(1).make_cases(0))
    assert peak < GRADER_PEAK_MB, f"the grading process peaked at {peak:.0f} MB"


# --------------------------------------------------------------------------- time

def _slow_cases(seed):
    return [Case(f"case {i}", "double", {"x": np.arange(3.0) + i}, hidden=i > 0, seed=seed,
                 describe="x [3]") for i in range(8)]


SLOW_TOY = Problem(number=92, slug="slow_double", title="Double, slowly", chapter="(toy)",
                   functions=["double"], statement="double(x) -> 2 * x", hints=["-"],
                   make_cases=_slow_cases, timeout_s=2.0,
                   check=lambda c, r: compare_arrays("double", 2 * c.args["x"], r, rtol=1e-9))


def test_sleeping_under_every_limit_ends_at_the_whole_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(plan, "STARTUP_S", {"numpy": 3.0, "torch": 3.0})
    budget = plan.plan_for(SLOW_TOY, _slow_cases(0)).total_s       # 3 + 2, 2, 0.1 * 16 = 8.6 s
    t0 = time.monotonic()
    res = _grade(tmp_path, SLOW_TOY, """
        import time
        import numpy as np
        def double(x):
            time.sleep(1.9)                 # just under the 2 s limit of every case
            return 2 * np.asarray(x)
        """)
    took = time.monotonic() - t0
    assert took < budget + 5, (took, budget)    # the sum of the limits would be 8 x 2 = 16 s
    assert res.status is ProblemStatus.FAILED and "time_budget" in _reasons(res)
    stopped = next(o for o in res.outcomes if o.reason == "time_budget")
    assert "whole time budget" in stopped.message


def test_an_honest_attempt_uses_a_small_part_of_its_budget(tmp_path):
    """Problem 8's model answer (the largest cases of the numpy problems) takes well under
    a tenth of its budget, so the budget never decides a right answer."""
    p8 = runner.find(8)
    t0 = time.monotonic()
    res = runner.grade(p8, ROOT / "solutions" / p8.filename, seed=2)
    took = time.monotonic() - t0
    assert res.passed and took < plan.plan_for(p8, p8.make_cases(2)).total_s / 10, took


# --------------------------------------------------------------------------- the seed

def test_nothing_the_attempt_can_read_holds_the_seed(tmp_path):
    """The attempt dumps its job file, environment, argv and /proc/self; the run's seed
    and its problem's stream appear in no encoding."""
    seed = seeds.draw()
    res = runner.grade(runner.find(1), _write(tmp_path, """
        import os, sys
        def kv_cache_bytes(*args, **kwargs):
            seen = []
            for path in ("/judge/job.pkl", "/proc/self/cmdline", "/proc/self/environ"):
                try:
                    seen.append(open(path, "rb").read().hex())
                except OSError:
                    pass
            seen.append(repr(sorted(os.environ.items())).encode().hex())
            seen.append(repr(sys.argv).encode().hex())
            print("".join(seen))
            raise ValueError("dumped")
        """), seed=seed)
    shown = "".join(o.output + o.message for o in res.outcomes)
    assert len(shown) > 100, "the dump did not reach the output"
    stream = seeds.for_problem(seed, 1)
    for value in (seed, stream):
        for form in (str(value), hex(value)[2:], value.to_bytes(16, "big").hex()):
            assert form not in shown and form.encode().hex() not in shown


def _write(tmp_path, src):
    path = tmp_path / "attempt.py"
    path.write_text(textwrap.dedent(src))
    return path
