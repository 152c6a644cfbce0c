"""The OS sandbox around one attempt (grader/jail.py, grader/limits.py), seen from inside:
what the attempt can see, write, start and reach, and what is left of it afterwards. The
toy problem of test_judge_robustness (double an array, 1 s per case) keeps it fast.
Skipped without bubblewrap on a learner's machine, a failure in CI."""
from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
import time

import pytest

from grader import plan, jail, limits, runner, sandbox
from grader.records import ProblemStatus
from tests.sandbox_support import require_sandbox
from tests.test_judge_robustness import TOY, first

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")
SLOW_TOY = dataclasses.replace(TOY, timeout_s=20.0)


@pytest.fixture(autouse=True)
def _sandbox():
    require_sandbox()


def grade(tmp_path, src, problem=TOY, isolation="jail"):
    path = tmp_path / "attempt.py"
    path.write_text(textwrap.dedent(src))
    return runner.grade(problem, path, seed=3, isolation=isolation)


def reports(tmp_path, body: str, problem=TOY) -> str:
    """Run ``body`` (which sets ``seen``) in the sandbox; return what it saw, carried back
    in the exception message of the first case."""
    res = grade(tmp_path, "import os, sys\ndef double(x):\n" + textwrap.indent(textwrap.dedent(body), "    ")
                + "\n    raise RuntimeError('S' + 'EEN<' + repr(seen) + '>S' + 'EEN')\n", problem)
    msg = first(res).message
    assert "SEEN<" in msg, msg
    return msg.rsplit("SEEN<", 1)[1].split(">SEEN", 1)[0]


def test_it_runs_in_the_sandbox_and_passes_a_good_attempt(tmp_path):
    res = grade(tmp_path, "import numpy as np\ndef double(x):\n    return 2 * np.asarray(x)\n")
    assert res.passed and res.isolation == "jail"


def test_it_sees_only_its_own_processes_and_is_nobody(tmp_path):
    seen = reports(tmp_path, """
        pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
        seen = (pids, os.getuid(), os.getgid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])
    """)
    pids, uid, gid, caps = eval(seen)
    assert pids == [1, 2] and uid == 65534 and gid == 65534 and int(caps, 16) == 0


def test_it_sees_no_course_no_home_and_a_cleared_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLA_CLASS_SEED", "123454321")
    seen = reports(tmp_path, f"""
        seen = (sorted(os.listdir('/')), os.path.exists({str(runner.ROOT / 'solutions')!r}),
                os.path.exists({str(runner.ROOT / 'mlacourse')!r}), os.path.exists({os.path.expanduser('~')!r} + '/.bashrc'),
                sorted(os.environ), os.getcwd(), os.listdir('/judge'))
    """)
    root, solutions, course, home, env, cwd, judge = eval(seen)
    assert not solutions and not course and not home
    assert "MLA_CLASS_SEED" not in env and not any(k.startswith("PYTHON") for k in env)
    expected = plan.Plan((), {}, 0.0, 0.0, stack="torch", gpu=False).environment(jail.HOME, jail.TMP)
    assert set(env) <= set(expected) | {"PWD"} and cwd == jail.WORK
    assert sorted(judge) == ["child", "job.pkl"]
    assert set(root) <= {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "sys", "proc",
                         "dev", "tmp", "judge", *{p.split("/")[1] for p in [sys.base_prefix, *jail.site_dirs(),
                                                                             str(tmp_path)]}}


def test_nothing_outside_its_tmpfs_is_writable_and_the_tmpfs_is_capped(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    seen = reports(tmp_path, f"""
        out = {{}}
        fd = os.open('/', os.O_RDONLY)
        for p in ({str(victim)!r}, {str(runner.ROOT / 'grader' / 'spec.py')!r}, {jail.site_dirs()[0]!r} + '/x.pth',
                  '/dev/x', '/x'):
            try:
                os.close(os.open(p.lstrip('/'), os.O_WRONLY | os.O_CREAT, dir_fd=fd))
                out[p] = 'written'
            except OSError as e:
                out[p] = e.strerror
        try:
            with open('/tmp/work/big', 'wb') as f:
                for _ in range(200):
                    f.write(b'#' * (1 << 20))
            out['big'] = 'written'
        except OSError as e:
            out['big'] = e.strerror
        seen = out
    """)
    got = eval(seen)
    # the victim's folder lies under /tmp, so inside the sandbox it is a folder of the private
    # tmpfs (made to hold the attempt's file): a write there lands in the tmpfs, not here
    got.pop(str(victim))
    assert victim.read_text() == "keep"
    big = got.pop("big")
    assert "written" not in got.values(), got
    if jail.supports("--size"):   # bubblewrap 0.8+: the tmpfs itself is capped
        assert big == "No space left on device"


def test_no_network(tmp_path):
    seen = reports(tmp_path, """
        import socket
        try:
            socket.create_connection(('1.1.1.1', 53), timeout=2)
            seen = 'connected'
        except OSError as e:
            seen = type(e).__name__
        seen = (seen, sorted(socket.if_nameindex()))
    """)
    assert "connected" not in seen and "'lo'" in seen and "eth" not in seen


def test_a_setsid_daemon_and_a_double_fork_do_not_survive(tmp_path):
    marker = f"MLASANDBOXTEST{os.getpid()}"
    res = grade(tmp_path, f"""
        import ctypes, os
        import numpy as np
        def double(x):
            libc = ctypes.CDLL(None)
            if libc.fork() == 0:
                libc.setsid()
                if libc.fork() == 0:
                    args = (ctypes.c_char_p * 5)(b"/bin/sh", b"-c", b"sleep 600", b"{marker}", None)
                    libc.execv(b"/bin/sh", args)
                libc._exit(0)
            return 2 * np.asarray(x)
        """)
    assert res.passed, res.first_failure()
    time.sleep(0.5)
    left = [p for p in filter(str.isdigit, os.listdir("/proc"))
            if marker.encode() in _cmdline(p)]
    assert not left


def _cmdline(pid) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def test_memory_beyond_the_cap_through_a_memfd_is_a_memory_failure(tmp_path):
    if limits.create(1 << 20, 8) is None:
        pytest.skip(limits.WEAKER)
    res = grade(tmp_path, """
        import mmap, os
        def double(x):
            fd = os.memfd_create("x")
            os.ftruncate(fd, 2 << 30)
            m = mmap.mmap(fd, 2 << 30)
            for i in range(0, 2 << 30, 4096):
                m[i] = 1
            return x
        """, SLOW_TOY)
    f = first(res)
    assert f.reason == "memory" and "memory cap" in f.message, f.message


def test_a_fork_storm_is_bounded(tmp_path):
    seen = reports(tmp_path, """
        import time
        n = 0
        try:
            for _ in range(500):
                import _posixsubprocess
                r, w = os.pipe()
                _posixsubprocess.fork_exec(["/bin/sleep", "30"], [b"/bin/sleep"], True, (), None, None,
                                           -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, -1, -1, None, False)
                os.close(r); os.close(w)
                n += 1
        except OSError:
            pass
        seen = n
    """, SLOW_TOY)
    assert int(seen) < 500


def test_the_record_from_the_pipe_is_checked_field_by_field():
    rec = sandbox.clean_record({"event": "done", "i": 0, "status": "ok", "result": {"__nd__": "<f8", "shape": [5],
                                                                                   "b64": "!!"}})
    assert rec["status"] == "error" and "could not be read" in rec["message"]
    rec = sandbox.clean_record({"status": "pwned"})
    assert rec["status"] == "error" and rec["type"] == "ProtocolError" and "cannot use" in rec["message"]
    # fields of the wrong type are made harmless; fields a status does not carry are dropped
    rec = sandbox.clean_record({"status": "ok", "result": 3, "mutated": [1, {"a": 2}], "launches": "x",
                                "from_kernel": "yes", "message": 5, "note": "kept?", "deep": {"a": [1]}})
    assert rec == {"status": "ok", "result": 3, "mutated": ["<int>", "<dict>"]}


@pytest.mark.parametrize("status", ["timeout", "crashed", "out_of_memory", "too_large", "not_run", "exited"])
def test_a_status_only_the_judge_gives_is_a_protocol_error_when_the_attempt_sends_it(status):
    """A forged "timeout" with timeout_s "forever" would make the verdict's formatting raise,
    and the attempt 'not graded' on every run: such a record is the attempt's failure."""
    rec = sandbox.clean_record({"event": "done", "i": 0, "status": status, "timeout_s": "forever",
                                "code": "x", "cap_mb": None, "signal": 9})
    assert rec == {"status": "error", "type": "ProtocolError",
                   "message": f"the process running the attempt sent a record the judge cannot use (status {status})"}


def test_every_text_of_a_record_is_bounded():
    huge = "x" * (40 << 20)
    rec = sandbox.clean_record({"status": "error", "message": huge, "type": huge, "output": huge})
    assert len(rec["message"]) < sandbox.TEXT_CAP + 100 and rec["message"].endswith("characters cut)")
    assert len(rec["type"]) < sandbox.TEXT_CAP + 100 and len(rec["output"]) < 5000
    rec = sandbox.clean_record({"status": "uses_reference", "uses": [huge] * 1000})
    assert len(rec["uses"]) == 20 and all(len(u) < 400 for u in rec["uses"])


def test_a_sandbox_that_does_not_start_is_the_machinerys_failure(tmp_path, monkeypatch):
    """Not the attempt's: 'unavailable' with reason 'infrastructure', and the message says so."""
    real = jail.command
    monkeypatch.setattr(jail, "command", lambda *a, **k: [real(*a, **k)[0], "--no-such-option"])
    res = grade(tmp_path, "def double(x):\n    return 2 * x\n")
    assert res.status is ProblemStatus.UNAVAILABLE and res.reason == "infrastructure"
    assert "not the attempt's fault" in res.message
    # the learner's judge (no isolation asked for) grades it behind the Python guard instead
    path = tmp_path / "attempt.py"
    res = runner.grade(TOY, path, seed=3)
    assert res.passed and res.isolation == "process"


def test_the_guard_fallback_names_a_read_of_another_process(tmp_path):
    """Without the sandbox (the Python guard): reading the judge's /proc entry is named for
    what it is, not as use of the course's reference."""
    res = grade(tmp_path, """
        import os
        def double(x):
            return open('/proc/%d/cmdline' % os.getppid()).read()
        """, isolation="process")
    f = first(res)
    assert "another process's /proc entry" in f.message and "reference implementation" not in f.message


def test_the_learners_judge_says_in_one_line_when_there_is_no_sandbox(monkeypatch, capsys):
    from grader import cli
    monkeypatch.setattr(jail, "probe", lambda: "bubblewrap (bwrap) is not installed")
    cli.sandbox_note()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no OS sandbox here" in err
    monkeypatch.setattr(jail, "probe", lambda: None)
    cli.sandbox_note()
    assert capsys.readouterr().err == ""


def test_the_command_binds_no_course_file():
    argv = jail.command(str(sandbox.CHILD), "/tmp/job.pkl", "/tmp/a/p01.py", 5,
                        plan.Plan((), {}, 0.0, 0.0, stack="torch", gpu=False), hide=[str(runner.ROOT)])
    sources = [argv[i + 1] for i, a in enumerate(argv[:-2]) if a in ("--ro-bind", "--bind", "--dev-bind")]
    root = str(runner.ROOT)
    # A venv inside the repository (.venv, what setup.sh makes) is bound as its site-packages
    # only, with the course's own entries there hidden (checked below); nothing else of the repo.
    sites = [s + "/" for s in jail.site_dirs()]
    inside = [s for s in sources if (s == root or s.startswith(root + "/")) and s != str(sandbox.CHILD)
              and not any((s + "/").startswith(site) for site in sites)]
    assert not inside, inside
    assert "--unshare-all" in argv and "--die-with-parent" in argv and "--new-session" in argv
    assert ("--clearenv" in argv) == jail.supports("--clearenv")
    assert ("--disable-userns" in argv) == jail.supports("--disable-userns")
    for site in jail.site_dirs():
        for name in os.listdir(site):
            if name.endswith(".pth") or name.startswith("__editable__"):
                assert os.path.join(site, name) in argv, name   # hidden


def test_a_venv_under_tmp_stays_visible(monkeypatch, tmp_path):
    """bwrap mounts in order: the scratch /tmp must come before the binds, or a venv under
    /tmp (pytest's tmp_path in CI's light-install test) vanishes and numpy is 'not installed'
    inside every attempt."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(jail, "site_dirs", lambda: [str(site)])
    argv = jail.command(str(sandbox.CHILD), "/tmp/job.pkl", None, 5, plan.Plan((), {}, 0.0, 0.0))
    scratch = next(i for i, a in enumerate(argv) if a == "--tmpfs" and argv[i + 1] == jail.TMP)
    bind = next(i for i, a in enumerate(argv) if a == "--ro-bind" and argv[i + 1] == str(site))
    assert scratch < bind, "the site-packages under /tmp would be hidden by the scratch tmpfs"
