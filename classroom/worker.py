"""A grading worker, started by pool.py (never by hand).

Reads one job per line on stdin -- {"problem", "path", "seed", "out", "protect",
"rename", "isolation", "sha256"} -- checks that the staged file still hashes to
``sha256``, grades it with the judge (``runner.grade``: the attempt runs in its own
sandbox, see grader/jail.py), writes the verdict record to ``out`` atomically with the
hash of what was graded in it (``graded_sha256``: the cache is checked against it on
read; the record is bounded and written readable by its owner only: verdicts.py), and
answers one short line on stdout (at most pool.MAX_REPLY bytes): {"ok": true}, {"ok": false, "infra": "..."} when
the sandbox could not run the attempt (nothing is written: not the attempt's fault), or
{"ok": false, "error": "..."} for a judge bug. Anything else this process prints goes to
stderr, so the protocol stays clean. The worker dies with the process that started it.
"""
from __future__ import annotations

import hashlib
import json
import sys
import traceback
from pathlib import Path

MAX_ERROR = 4000   # characters of a judge bug's traceback in a reply (its end: the raise)


def main() -> int:
    proto = sys.stdout
    sys.stdout = sys.stderr
    from grader import child, runner
    from grader.reasons import Reason

    from . import verdicts
    from .grade import record_of, replace_strings
    child.die_with_parent()
    problems = {p.number: p for p in runner.discover()}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            path = Path(job["path"])
            graded = hashlib.sha256(path.read_bytes()).hexdigest()
            if job.get("sha256") and graded != job["sha256"]:
                raise RuntimeError(f"the staged file {path} changed: it hashes to {graded[:12]}, "
                                   f"expected {job['sha256'][:12]}")
            r = runner.grade(problems[int(job["problem"])], path, int(job["seed"]),
                             protect=job.get("protect", []), isolation=job.get("isolation"))
            if r.reason is Reason.INFRASTRUCTURE:
                reply = {"ok": False, "infra": str(r.message)[:MAX_ERROR]}
            else:
                rec = verdicts.bound(replace_strings(record_of(r, path), job.get("rename", {})))
                rec["graded_sha256"] = graded
                verdicts.write(Path(job["out"]), rec)
                reply = {"ok": True}
        except Exception:  # noqa: BLE001 -- a judge bug: report it, keep serving
            reply = {"ok": False, "error": traceback.format_exc()[-MAX_ERROR:]}
        proto.write(json.dumps(reply) + "\n")
        proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
