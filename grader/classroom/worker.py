"""A grading worker: ``python -m grader.classroom.worker`` (started by pool.py, never by hand).

Reads one job per line on stdin -- {"problem", "path", "seed", "out", "protect"} -- grades
it with the judge (``runner.grade``: the attempt runs in the judge's own sandbox child),
writes the verdict record to ``out`` atomically, and answers one line on stdout:
{"ok": true} or {"ok": false, "error": "..."}. Anything else this process prints goes to
stderr, so the protocol stays clean.

The judge's sandbox child is started by this process, and graded code can signal its
parent. So that an attempt which kills this worker cannot live on as an orphan (and
signal whichever process adopts it), the worker starts the judge's children through a
small launcher (``death_pact``) that asks the kernel to kill the child when its parent
dies (Linux's PR_SET_PDEATHSIG) and then becomes the real interpreter. The judge picks
the interpreter from ``sys.executable``; the worker points that at the launcher.
"""
from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

LAUNCHER = """# started by grader/classroom/worker.py: die with the parent, then run the real Python
import ctypes, os, sys
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)   # PR_SET_PDEATHSIG, SIGKILL
except Exception:
    pass
if os.getppid() != {parent}:    # the parent died before the pact was made
    os._exit(70)
os.execv({python!r}, [{python!r}] + sys.argv[1:])
"""


def death_pact() -> str | None:
    """Write the launcher and return its path; None where there is no PR_SET_PDEATHSIG
    (not Linux). util-linux's ``setpriv --pdeathsig`` does it in a few milliseconds where
    it is installed; otherwise a Python launcher (about 50 ms more per attempt)."""
    if not sys.platform.startswith("linux"):
        return None
    folder = Path(tempfile.mkdtemp(prefix="mla-worker-"))
    atexit.register(shutil.rmtree, folder, True)
    python = shlex.quote(sys.executable)
    setpriv = shutil.which("setpriv")
    if setpriv and _setpriv_works(setpriv):
        line = f"exec {shlex.quote(setpriv)} --pdeathsig KILL -- {python} \"$@\""
    else:
        (folder / "launcher.py").write_text(LAUNCHER.format(python=sys.executable, parent=os.getpid()))
        line = f"exec {python} -IS {shlex.quote(str(folder / 'launcher.py'))} \"$@\""
    sh = folder / "python-with-death-pact"     # /bin/sh: no limit on the interpreter's path
    sh.write_text(f"#!/bin/sh\n{line}\n")
    sh.chmod(0o700)
    return str(sh)


def _setpriv_works(setpriv: str) -> bool:
    import subprocess
    try:
        return subprocess.run([setpriv, "--pdeathsig", "KILL", "--", "true"], capture_output=True,
                              timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def main() -> int:
    proto = sys.stdout
    sys.stdout = sys.stderr
    from grader import runner

    from .grade import protect, record_of, replace_strings
    problems = {p.number: p for p in runner.discover()}
    launcher = death_pact()
    if launcher:
        sys.executable = launcher   # grader/sandbox.py starts its children with sys.executable
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            path = Path(job["path"])
            with protect(job.get("protect", [])):
                r = runner.grade(problems[int(job["problem"])], path, int(job["seed"]))
            rec = replace_strings(record_of(r, path), job.get("rename", {}))
            text = json.dumps(rec, sort_keys=True, indent=1)
            out = Path(job["out"])
            tmp = out.with_name(out.name + f".{os.getpid()}.part")
            tmp.write_text(text)
            tmp.replace(out)
            reply = {"ok": True}
        except Exception:  # noqa: BLE001 -- a judge bug: report it, keep serving
            reply = {"ok": False, "error": traceback.format_exc()}
        proto.write(json.dumps(reply) + "\n")
        proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
