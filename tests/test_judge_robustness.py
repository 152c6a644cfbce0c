"""The judge against hostile or broken attempts: each failure mode gets a clear verdict,
and nothing the attempt does in its own process can turn into a pass.

Uses a toy problem (double an array) with a 1-second case timeout so the suite is fast;
the runner is the same one every real problem goes through."""
from __future__ import annotations

import json
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from grader import child, runner, sandbox
from grader.lang import said
from grader.records import CaseOutcome, CaseStatus, ProblemResult, ProblemStatus, Reason
from grader.spec import Case, Mistake, Problem, Verdict, compare_arrays, fail


def _make_cases(seed):
    rng = np.random.default_rng(seed)
    return [Case("small", "double", {"x": np.arange(6.0).reshape(2, 3)}, describe="x [2, 3]"),
            Case("random", "double", {"x": rng.standard_normal((4, 5))}, hidden=True, seed=seed,
                 describe="x [4, 5]")]


def _check(case, result):
    return compare_arrays("double", 2 * case.args["x"], result, rtol=1e-9, dims="[n, d]")


TOY = Problem(number=90, slug="double", title="Double an array", chapter="(toy)",
              functions=["double"], statement="double(x) -> 2 * x", hints=["multiply by 2"],
              make_cases=_make_cases, check=_check,
              mistakes=[Mistake("identity", "You returned x unchanged; multiply it by 2.",
                                lambda x: np.array(x))],
              timeout_s=1.0, memory_mb=256)


def grade_src(tmp_path, src, problem=TOY, **kw):
    path = tmp_path / "attempt.py"
    path.write_text(textwrap.dedent(src))
    return runner.grade(problem, path, seed=7, **kw)


def grade_batch(tmp_dir, sources: dict, problem=TOY, workers=3) -> dict:
    """Grade many attempts concurrently (each is its own child process)."""
    def one(item):
        name, src = item
        path = tmp_dir / f"attempt_{abs(hash(name))}.py"
        path.write_text(textwrap.dedent(src))
        return name, runner.grade(problem, path, seed=7)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(one, sources.items()))


def first(res):
    f = res.first_failure()
    assert f is not None, f"expected a failure, got status {res.status}"
    return f


GOOD = "import numpy as np\ndef double(x):\n    return 2 * np.asarray(x)\n"
FAKE = json.dumps({"event": "done", "i": 0, "status": "ok",
                   "result": child.encode(np.arange(6.0).reshape(2, 3) * 2)})

ATTEMPTS = {
    "good": GOOD,
    "not implemented": "def double(x):\n    raise NotImplementedError('todo')\n",
    "infinite loop": "def double(x):\n    while True:\n        pass\n",
    "sys.exit in function": "import sys\ndef double(x):\n    sys.exit(0)\n",
    "sys.exit at import": "import sys\nsys.exit(3)\n",
    "os._exit": "import os\ndef double(x):\n    os._exit(0)\n",
    "segfault": "import os, signal\ndef double(x):\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
    "syntax error": "def double(x)\n    return 2 * x\n",
    "missing function": "def triple(x):\n    return 3 * x\n",
    "exception": "import numpy as np\ndef helper(x):\n    return np.reshape(x, (7, 7))\n"
                 "def double(x):\n    return helper(x)\n",
    "nan": "import numpy as np\ndef double(x):\n    return np.full(np.shape(x), np.nan)\n",
    "str": "def double(x):\n    return 'twelve'\n",
    "none": "def double(x):\n    return None\n",
    "object": "def double(x):\n    return object()\n",
    "shape": "def double(x):\n    return (2 * x)[:1]\n",
    "flood": """
        import os, sys
        def double(x):
            for _ in range(20000):
                print("spam " * 20)
            os.write(1, b"raw " * 500000)
            sys.stderr.write("err " * 100000)
            return 3 * x
        """,
    "patch numpy and builtins": """
        import builtins, numpy as np
        np.allclose = lambda *a, **k: True
        np.array_equal = lambda *a, **k: True
        np.testing.assert_allclose = lambda *a, **k: None
        builtins.abs = lambda v: 0
        def double(x):
            return x + 1
        """,
    "fake result markers": f"""
        import os
        FAKE = {FAKE!r}
        def double(x):
            print("deadbeef\\t" + FAKE)                  # a made-up token on stdout
            for fd in range(3, 40):                      # ...and on every other descriptor
                try:
                    os.write(fd, ("0" * 32 + "\\t" + FAKE + "\\n").encode())
                except OSError:
                    pass
            return x
        """,
    "mutates input": "def double(x):\n    x *= 2\n    return x\n",
    "memory hog": "import numpy as np\ndef double(x):\n"
                  "    big = np.ones((1024, 1024, 512))\n    return 2 * x\n",
    "lingering thread": """
        import threading, time
        import numpy as np
        threading.Thread(target=time.sleep, args=(60,)).start()
        def double(x):
            return 2 * np.asarray(x)
        """,
    "dies between cases": """
        import os, signal, threading, time
        import numpy as np
        def _later():
            time.sleep(0.3)
            os.kill(os.getpid(), signal.SIGKILL)
        def double(x):
            threading.Thread(target=_later, daemon=True).start()
            time.sleep(0.6) if np.shape(x) == (4, 5) else None
            return 2 * np.asarray(x)
        """,
    "identity": "def double(x):\n    return x\n",
    "triple": "def double(x):\n    return 3 * x\n",
    "public only": "import numpy as np\ndef double(x):\n    x = np.asarray(x)\n"
                   "    return 2 * x if x.shape == (2, 3) else x\n",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    t0 = time.monotonic()
    res = grade_batch(tmp_path_factory.mktemp("attempts"), ATTEMPTS)
    res["_elapsed"] = time.monotonic() - t0
    return res


def test_whole_batch_is_bounded(graded):
    # 1 s per case timeout; nothing may hang the judge
    assert graded["_elapsed"] < 30


def test_correct_attempt_passes(graded):
    assert graded["good"].status is ProblemStatus.PASSED


def test_not_implemented_is_not_started(graded):
    res = graded["not implemented"]
    assert res.status is ProblemStatus.NOT_STARTED
    assert "not written yet" in res.outcomes[0].message


def test_infinite_loop_times_out(graded):
    res = graded["infinite loop"]
    f = first(res)
    assert res.status is ProblemStatus.FAILED and "still running after 1 s" in f.message
    assert [o.status for o in res.outcomes] == [CaseStatus.FAIL, CaseStatus.NOT_RUN]


def test_infinite_loop_at_import_times_out(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "STARTUP_S", {"numpy": 1.0, "torch": 1.0})
    res = grade_src(tmp_path, "while True:\n    pass\n")
    assert res.status is ProblemStatus.FAILED and "could not be loaded" in res.message
    assert "still running" in res.message


def test_threads_and_processes_left_behind_do_not_stall_the_judge(graded):
    res = graded["lingering thread"]
    assert res.status is ProblemStatus.PASSED and res.elapsed < 10


def test_death_between_cases_is_pinned_on_a_case(graded):
    res = graded["dies between cases"]
    f = first(res)
    assert res.status is ProblemStatus.FAILED and "crashed (SIGKILL)" in f.message
    assert f.case.name == "random" and res.outcomes[0].passed


def test_sys_exit_in_function(graded):
    assert "tried to stop the program" in first(graded["sys.exit in function"]).message


def test_sys_exit_at_import(graded):
    res = graded["sys.exit at import"]
    assert res.status is ProblemStatus.FAILED and "exit" in res.message and not res.outcomes


def test_os_exit(graded):
    """os._exit is caught before it ends the process: the verdict names it."""
    f = first(graded["os._exit"])
    assert "tried to stop the program (os._exit(0))" in f.message and f.reason == "exit"


def test_segfault(graded):
    assert "crashed (SIGSEGV)" in first(graded["segfault"]).message


def test_syntax_error(graded):
    res = graded["syntax error"]
    assert res.status is ProblemStatus.FAILED and "SyntaxError" in res.message and "line 1" in res.message


def test_missing_function(graded):
    assert "no function named 'double'" in first(graded["missing function"]).message


def test_exception_traceback_shows_only_learner_lines(graded):
    f = first(graded["exception"])
    assert "line 5, in double" in f.message and "line 3, in helper" in f.message
    assert "ValueError" in f.message and "fromnumeric" not in f.message


def test_nan_result(graded):
    assert "NaN" in first(graded["nan"]).message


@pytest.mark.parametrize("name, words", [
    ("str", "returned a str"),
    ("none", "returned None"),
    ("object", "object of type builtins.object"),
    ("shape", "returned shape (1, 3), expected [n, d] = (2, 3)"),
])
def test_wrong_type_or_shape(graded, name, words):
    assert words in first(graded[name]).message


def test_output_flood_is_capped(graded):
    res = graded["flood"]
    f = first(res)
    assert "more characters of output not shown" in f.output
    assert len(f.output) < 10_000 and len(res.output) < 10_000


def test_patching_numpy_and_builtins_cannot_fake_a_pass(graded):
    res = graded["patch numpy and builtins"]
    assert res.status is ProblemStatus.FAILED and "does not match" in first(res).message


def test_fake_result_markers_are_ignored(graded):
    res = graded["fake result markers"]
    f = first(res)
    assert res.status is ProblemStatus.FAILED and "does not match" in f.message
    assert f.mistake == "You returned x unchanged; multiply it by 2."


def test_mutating_inputs_is_reported(graded):
    """The sandboxed child hands arrays over read-only (grader/child/inputs.py freeze_arrays): the
    write itself fails, and the verdict says where."""
    f = first(graded["mutates input"])
    assert f.reason == "mutated_input" and f.mistake is None
    assert "tried to change one of its input arrays in place" in f.message and "x *= 2" in f.message


def test_where_inputs_are_not_frozen_a_change_is_caught_by_comparison():
    """Where arrays cannot be frozen (not Linux, a notebook's own objects) and for lists,
    the child compares each argument after the call with a snapshot taken before it."""
    rec = child.run_case(lambda x: x.__imul__(2), {"x": np.ones((2, 3))}, "<test>")
    assert rec["status"] == "ok" and rec["mutated"] == ["x[0, 0] was 1.0, now 2.0 (6 of 6 values changed)"]
    rec = child.run_case(lambda xs: xs.pop(), {"xs": [1, 2]}, "<test>")
    assert rec["mutated"] and rec["mutated"][0].startswith("xs")


def test_memory_hog_gets_memory_error(graded):
    f = first(graded["memory hog"])
    assert "ran out of memory" in f.message and "MemoryError" in f.message


def test_mistake_named_only_when_it_applies(graded):
    assert first(graded["identity"]).mistake == "You returned x unchanged; multiply it by 2."
    f = first(graded["triple"])
    assert f.mistake is None and "does not match" in f.message


def test_hidden_failure_reports_seed(graded):
    from grader import report
    res = graded["public only"]
    f = first(res)
    assert f.case.hidden and res.seed == 7 and "seed" not in f.case.describe
    text = report.details(res)
    assert "--seed 7" in text and "public 1/1" in text
    assert "public cases pass, but hidden case" in report.status_line(res)


def test_where_an_attempt_runs_is_one_decision(monkeypatch):
    """runner.default_isolation turns the platform's facts into one answer, for a file
    and for a notebook's functions (module)."""
    from grader import jail
    from grader.records import Isolation
    module = object()
    monkeypatch.setattr(jail, "available", lambda: True)
    assert (runner.default_isolation(), runner.default_isolation(module)) == (Isolation.JAIL, Isolation.FORK)
    monkeypatch.setattr(jail, "available", lambda: False)
    assert runner.default_isolation() is Isolation.PROCESS
    monkeypatch.setattr(runner, "CAN_FORK", False)            # Windows has no fork ...
    monkeypatch.setattr(runner, "NO_SUBPROCESS", True)        # ... and cannot watch a child's pipes
    assert (runner.default_isolation(), runner.default_isolation(module)) == (Isolation.NONE, Isolation.NONE)
    monkeypatch.setattr(runner, "CAN_FORK", True)
    monkeypatch.setattr(runner, "NO_SUBPROCESS", False)
    monkeypatch.setattr(runner, "IN_BROWSER", True)           # Pyodide: this process, always
    assert (runner.default_isolation(), runner.default_isolation(module)) == (Isolation.NONE, Isolation.NONE)


def test_an_isolation_that_cannot_hold_the_attempt_is_refused(tmp_path):
    for isolation, module in (("fork", None), ("jail", object()), ("process", object()), ("cage", None),
                              ("user:1", None)):
        with pytest.raises(ValueError, match="isolation|cannot run"):
            grade_src(tmp_path, GOOD, isolation=isolation, module=module)
    res = grade_src(tmp_path, GOOD, isolation="none")
    assert res.passed and res.isolation == "none" and res.in_process


def test_in_process_mode_for_the_browser(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "IN_BROWSER", True)
    res = grade_src(tmp_path, GOOD)
    assert res.status is ProblemStatus.PASSED and res.in_process
    from grader import report
    text = report.details(res)
    assert "inside this Python process" in text and "no time limit" in text and "interrupt" in text


def test_decode_refuses_object_arrays_and_never_unpickles():
    evil = {"__nd__": "|O", "shape": [1], "b64": "AAAAAAAAAAA="}
    assert "__unsupported__" in child.decode(evil)
    assert child.decode({"__dict__": [[{"__list__": [1]}, 2]]}) == {"[1]": 2}
    round_trip = child.decode(json.loads(json.dumps(child.encode(
        {"a": np.arange(3, dtype=np.float32), "b": (1, float("nan"), "s")}))))
    assert round_trip["a"].dtype == np.float32 and np.isnan(round_trip["b"][1])


def test_missing_requirement_says_so_instead_of_grading(tmp_path):
    import dataclasses
    from grader import report
    needy = dataclasses.replace(TOY, requires=("numpy", "no_such_module_for_the_judge"))
    res = grade_src(tmp_path, GOOD, problem=needy)
    assert res.status is ProblemStatus.UNAVAILABLE and "no_such_module_for_the_judge" in res.message
    assert "unavailable" in report.status_line(res)
    assert report.to_json([res])["tests"][0]["status"] == "error"


def test_memory_cap_without_rlimit_falls_back_to_allocation_accounting(monkeypatch):
    """Where RLIMIT_DATA is not enforced (macOS), a case's memory_mb is still checked."""
    def hog(x):
        big = np.ones((64, 1024, 1024 // 8))  # 64 MB
        return 2 * x + big[0, 0, 0] * 0
    rec = child.run_case(hog, {"x": np.ones(3)}, "<test>", trace_memory_mb=16)
    assert rec["status"] == "memory_error" and "64 MB at peak" in rec["message"]
    rec = child.run_case(lambda x: 2 * x, {"x": np.ones(3)}, "<test>", trace_memory_mb=16)
    assert rec["status"] == "ok"


# ---- tampering with files, or escaping the guard through another program ----------

def test_writing_outside_the_scratch_folder_is_refused(tmp_path):
    """An attempt that rewrites a file of the judge (here a stand-in) to fake a later
    pass: the write is refused, the file is unchanged, and the verdict says why."""
    victim = tmp_path / "p04_choose_path.py"
    victim.write_text("PROBLEM = 'original'\n")
    res = grade_src(tmp_path, f"""
        import numpy as np
        def double(x):
            with open({str(victim)!r}, "w") as f:
                f.write("PROBLEM = 'tampered'")
            return 2 * np.asarray(x)
        """)
    assert victim.read_text() == "PROBLEM = 'original'\n"
    assert res.status is ProblemStatus.FAILED
    assert "may not write to" in first(res).message and "PermissionError" in first(res).message


@pytest.mark.parametrize("action", [
    "os.remove(VICTIM)",
    "os.rename(VICTIM, VICTIM + '.bak')",
    "pathlib.Path(VICTIM).write_text('x')",
    "shutil.copyfile(os.__file__, VICTIM)",
    "os.close(os.open(VICTIM, os.O_WRONLY | os.O_TRUNC))",
])
def test_other_ways_of_changing_files_are_refused(tmp_path, action):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    res = grade_src(tmp_path, f"""
        import os, pathlib, shutil
        import numpy as np
        VICTIM = {str(victim)!r}
        def double(x):
            {action}
            return 2 * np.asarray(x)
        """)
    assert victim.read_text() == "keep me"
    assert res.status is ProblemStatus.FAILED and "PermissionError" in first(res).message


@pytest.mark.parametrize("spawn", [
    "subprocess.run(['true'])",
    "os.system('true')",
    "os.posix_spawn('/bin/true', ['true'], {})",
])
def test_starting_other_programs_is_refused(tmp_path, spawn):
    res = grade_src(tmp_path, f"""
        import os, subprocess
        import numpy as np
        def double(x):
            {spawn}
            return 2 * np.asarray(x)
        """)
    assert res.status is ProblemStatus.FAILED
    assert "may not start other programs" in first(res).message


def test_scratch_folder_stays_writable(tmp_path):
    """Temporary files (tempfile, the working directory) are still allowed."""
    res = grade_src(tmp_path, """
        import tempfile
        import numpy as np
        def double(x):
            with tempfile.NamedTemporaryFile("w", delete=True) as f:
                f.write("scratch")
            with open("notes.txt", "w") as f:
                f.write("cwd is the scratch folder")
            return 2 * np.asarray(x)
        """)
    assert res.status is ProblemStatus.PASSED, res.first_failure() and res.first_failure().message


# ---- out of memory in native code, and what the header says about cases not run ------

def test_native_out_of_memory_is_named_with_the_cap(tmp_path):
    """OpenBLAS ends the process with exit(1) when it cannot allocate: the verdict says
    the attempt ran out of memory and gives the cap -- not 'did you call os._exit?' --
    and the cases after it count as not run, not as failed."""
    from grader import report
    res = grade_src(tmp_path, """
        import ctypes, os
        def double(x):
            os.write(2, b"OpenBLAS error: Memory allocation still failed after 10 retries, giving up.\\n")
            ctypes.CDLL(None).exit(1)
        """)
    f = first(res)
    assert f.reason == "memory" and "ran out of memory" in f.message and "256 MB" in f.message
    assert "os._exit" not in f.message
    assert [o.status for o in res.outcomes] == [CaseStatus.FAIL, CaseStatus.NOT_RUN]
    assert "hidden 0/1 (1 not run)" in report.headline(res)


def test_check_in_a_notebook_survives_a_memory_hog_and_a_loop():
    """check() runs cell functions in a fork with the command line's limits: the
    notebook's own process (this one) survives both and gets a verdict."""
    import numpy as np
    def hog(x):
        return np.ones((1024, 1024, 1024)) * 0 + 2 * x  # 8 GiB
    def loop(x):
        while True:
            pass
    import types
    res = runner.grade(TOY, "<notebook: double>", seed=1, module=types.SimpleNamespace(double=hog))
    assert res.isolation == "fork" and first(res).reason == "memory"
    res = runner.grade(TOY, "<notebook: double>", seed=1, module=types.SimpleNamespace(double=loop))
    assert first(res).reason == "timeout" and "still running after 1 s" in first(res).message
    good = runner.grade(TOY, "<notebook: double>", seed=1,
                        module=types.SimpleNamespace(double=lambda x: 2 * np.asarray(x)))
    assert good.passed


def test_reference_use_is_refused_by_every_route(tmp_path):
    """Importing the course's packages (any spelling) or reading their files is refused
    with a verdict that says so, even if the attempt catches the error."""
    routes = {
        "import": "from mlacourse.attention import attention",
        "importlib": "import importlib; importlib.import_module('mlacourse.flops')",
        "__import__": "__import__('grader.problems.p01_kv_cache_bytes.spec')",
        "solutions": "import solutions",
        "read source": f"open({str(runner.ROOT / 'mlacourse' / 'flops.py')!r}).read()",
        "runpy": f"import runpy; runpy.run_path({str(runner.SOLUTIONS / 'p04_choose_path.py')!r})",
        "caught": "try:\n        import mlacourse\n    except Exception:\n        pass",
    }
    for name, line in routes.items():
        res = grade_src(tmp_path, "import numpy as np\ndef double(x):\n    " + line
                        + "\n    return 2 * np.asarray(x)\n")
        f = first(res)
        assert res.status is ProblemStatus.FAILED and f.reason == "uses_reference", (name, f.message)
        assert "write it yourself" in f.message, name


# ---- the attempt's process and the judge's --------------------------------------------

def test_graded_code_may_not_signal_other_processes(tmp_path):
    """`os.kill(os.getppid(), 9)` would kill the judge: refused, and the judge lives on."""
    res = grade_src(tmp_path, """
        import os
        import numpy as np
        def double(x):
            os.kill(os.getppid(), 9)
            return 2 * np.asarray(x)
        """)
    f = first(res)
    assert "may not signal other processes" in f.message and "PermissionError" in f.message


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_attempts_process_dies_with_the_judge(tmp_path):
    """The child asks the kernel for SIGKILL when its parent (the judge) dies, so an
    attempt cannot outlive the judge; the attempt below passes only if that is set."""
    res = grade_src(tmp_path, """
        import ctypes
        import numpy as np
        def double(x):
            sig = ctypes.c_int()
            ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)   # PR_GET_PDEATHSIG
            return 2 * np.asarray(x) if sig.value == 9 else np.asarray(x)
        """)
    assert res.status is ProblemStatus.PASSED, first(res).message


def test_forged_start_events_cannot_extend_the_run(tmp_path, monkeypatch):
    """Graded code can find the protocol's token in its own frames and print fake 'start'
    events to reset the per-case deadline; the whole run's budget still ends it."""
    import grader.plan as plan
    import grader.sandbox as sb
    monkeypatch.setattr(sb, "START_GAP_S", 0.5)
    monkeypatch.setattr(plan, "STARTUP_S", {"numpy": 3.0, "torch": 3.0})
    t0 = time.monotonic()
    res = grade_src(tmp_path, """
        import json, sys, time
        import numpy as np
        def double(x):
            f = sys._getframe()
            while "send" not in f.f_locals:    # up to the harness's frame
                f = f.f_back
            send = f.f_locals["send"]
            while True:
                send({"event": "start", "i": 0})   # keep asking for a fresh deadline
                time.sleep(0.2)
        """)
    # the attempt's budget (grader/plan.py): startup 3 + 1, the largest limit 1, a tenth of 2 x 1 = 5.2 s
    assert time.monotonic() - t0 < 12
    assert first(res).reason == "time_budget" and "whole time budget of 5 s" in first(res).message


def test_a_reason_is_its_word_in_json_and_a_misspelt_one_raises():
    """Reason is a str Enum: JSON, gradebooks and caches carry the same words as before; a
    tag set as a string becomes the member, and a tag that is not one raises where it is set."""
    assert fail(said("no"), "wrong_type").reason is Reason.WRONG_TYPE
    assert json.dumps({"reason": Reason.NOT_FINITE}) == '{"reason": "not_finite"}'
    assert Reason("time_budget") == "time_budget" and str(Reason.TIME_BUDGET) == "time_budget"
    case = Case("c", "double", {})
    assert CaseOutcome(case).fail("x", "memory").reason is Reason.MEMORY
    assert CaseOutcome(case).reason is Reason.PASSED and ProblemResult(TOY, "f.py").reason is None
    for bad in (lambda: fail(said("no"), "wrong type"), lambda: Verdict(False, "", "Wrong_Answer"),
                lambda: CaseOutcome(case).fail("x", "oom"), lambda: CaseOutcome(case, reason="ok"),
                lambda: ProblemResult(TOY, "f.py").broken("x", "import error"),
                lambda: ProblemResult(TOY, "f.py", reason="import error")):
        with pytest.raises(ValueError):
            bad()
