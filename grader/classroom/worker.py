"""A grading worker: ``python -m grader.classroom.worker`` (started by pool.py, never by hand).

Reads one job per line on stdin -- {"problem", "path", "seed", "out", "protect"} -- grades
it with the judge (``runner.grade``: the attempt runs in the judge's own sandbox child,
which dies with this worker and may not signal other processes; ``protect`` keeps the
class's other submissions and the grades folder out of its reach), writes the verdict
record to ``out`` atomically, and answers one line on stdout: {"ok": true} or
{"ok": false, "error": "..."}. Anything else this process prints goes to stderr, so the
protocol stays clean.
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def main() -> int:
    proto = sys.stdout
    sys.stdout = sys.stderr
    from grader import runner

    from .grade import record_of, replace_strings
    problems = {p.number: p for p in runner.discover()}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            path = Path(job["path"])
            r = runner.grade(problems[int(job["problem"])], path, int(job["seed"]),
                             protect=job.get("protect", []))
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
