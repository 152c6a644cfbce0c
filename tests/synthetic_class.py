"""Synthetic classes: folders of made-up submissions with known verdicts, for the tests and
for timing the grader.

    python -m tests.synthetic_class --students 200 --out /tmp/class200 [--problems 1-11]
    python -m classroom grade /tmp/class200 --out /tmp/grades200 --seed 1

Each attempt kind below writes one practice file and says what the judge must conclude
(``Attempt.status`` and ``Attempt.reason``). "right" attempts are the model answers from
solutions/ with a comment naming the student, so that no two students hand in the same
bytes (a real class does not either) and the grader's de-duplication does not flatter a
timing. Unchanged stubs, as in a real class, are identical for everyone.
"""
from __future__ import annotations

import argparse
import random
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Attempt:
    text: bytes
    status: str            # expected ProblemStatus value
    reason: str = ""       # expected reason tag ("" when passed)
    mistake: str = ""      # expected named mistake, if any


def _problem(number):
    from grader import runner
    return runner.find(number)


def _solution(p) -> str:
    return (ROOT / "solutions" / p.filename).read_text()


def right(p, student: str) -> Attempt:
    return Attempt(f"# {student}'s answer\n{_solution(p)}".encode(), "passed")


def stub(p, student: str = "") -> Attempt:
    from grader import runner  # its PRACTICE: the tests point it at the committed stubs
    return Attempt((runner.PRACTICE / p.filename).read_bytes(), "not started", "not_started")


_PERTURB = '''

# --- a slip: every number comes out 10% too large (beyond every spec's tolerance)
def _perturb(x):
    if isinstance(x, dict):
        return {k: _perturb(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_perturb(v) for v in x)
    if x is None or isinstance(x, (str, bool)):
        return x
    try:
        return x * 1.1 + 0.1
    except Exception:
        return x


def _slipped(f):
    def g(*args, **kwargs):
        return _perturb(f(*args, **kwargs))
    return g


for _name in {names!r}:
    globals()[_name] = _slipped(globals()[_name])
'''


def wrong(p, student: str) -> Attempt:
    """The model answer with every numeric result 10% off: wrong on every case (problem 12
    accepts 1e-2, so a 0.1% slip would pass there)."""
    text = f"# {student}'s answer\n{_solution(p)}" + _PERTURB.replace("{names!r}", repr(list(p.functions)))
    return Attempt(text.encode(), "failed", "wrong_answer")


def noncausal_p04(student: str) -> Attempt:
    """Problem 4 with every (new, context) pair counted: the judge names the slip."""
    text = _solution(_problem(4)).replace("pairs = n_new * n_ctx - n_new * (n_new - 1) // 2",
                                          "pairs = n_new * n_ctx")
    assert "pairs = n_new * n_ctx\n" in text, "solutions/p04 changed: update the synthetic slip"
    return Attempt(f"# {student}\n{text}".encode(), "failed", "wrong_answer", "non-causal pairs")


def _defs(p, body: str, header: str = "") -> bytes:
    lines = [header] if header else []
    for fn in p.functions:
        lines += [f"def {fn}(*args, **kwargs):", *("    " + ln for ln in body.splitlines()), ""]
    return "\n".join(lines).encode()


def timeout(p, student: str = "") -> Attempt:
    return Attempt(_defs(p, f"# {student}\nwhile True:\n    pass"), "failed", "timeout")


def memory_hog(p, student: str = "") -> Attempt:
    """Asks for 4 GB at once (the judge's cap is 0.5-1.5 GB): refused at once, a MemoryError."""
    return Attempt(_defs(p, f"# {student}\nblocks = []\nwhile True:\n    blocks.append(bytearray(4 << 30))"),
                   "failed", "memory")


def uses_reference(p, student: str = "") -> Attempt:
    """Returns exactly the spec's reference (which passes every case) -- refused."""
    mod = f"grader.problems.{p.stem}.spec"
    lines = [f"# {student}", "import importlib", f"_spec = importlib.import_module({mod!r}).PROBLEM", ""]
    for fn in p.functions:
        lines += [f"def {fn}(*args, **kwargs):", f"    return _spec.reference[{fn!r}](*args, **kwargs)", ""]
    return Attempt("\n".join(lines).encode(), "failed", "uses_reference")


def kills_grader(p, student: str = "") -> Attempt:
    """Tampering: signals the process that grades it -- through libc, past the judge's
    refusal of os.kill. In the sandbox its parent is the sandbox's own init, which
    ignores the signal: the grader is out of reach, and the function returns None."""
    return Attempt(_defs(p, f"# {student}\nimport ctypes, os, signal\n"
                            "ctypes.CDLL(None).kill(os.getppid(), signal.SIGKILL)"),
                   "failed", "wrong_type")


def signals_grader(p, student: str = "") -> Attempt:
    """Tampering: os.kill on the process that grades it; the judge refuses the call."""
    return Attempt(_defs(p, f"# {student}\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)"),
                   "failed", "exception")


def reads_classmates(p, student: str = "") -> Attempt:
    """Tampering: looks for another student's file for the same problem next to its own
    staged copy and runs it. The sandbox shows it its own file only: none is found."""
    body = (f"# {student}\nimport glob, os\n"
            "here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
            "for other in sorted(glob.glob(os.path.join(here, '*', os.path.basename(__file__)))):\n"
            "    if os.path.abspath(other) != os.path.abspath(__file__):\n"
            "        ns = {}\n"
            "        exec(open(other).read(), ns)\n"
            "        return ns[FN](*args, **kwargs)\n"
            "raise RuntimeError('no classmate found')")
    lines = []
    for fn in p.functions:
        lines += [f"def {fn}(*args, FN={fn!r}, **kwargs):", *("    " + ln for ln in body.splitlines()), ""]
    return Attempt("\n".join(lines).encode(), "failed", "exception")


def writes_gradebook(p, student: str = "") -> Attempt:
    """Tampering: tries to overwrite the gradebook while being imported."""
    text = (f"# {student}\nimport os\n"
            "root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
            "open(os.path.join(root, 'gradebook.csv'), 'w').write('student,total\\nme,999\\n')\n")
    return Attempt(text.encode() + _defs(p, "return 0"), "failed", "import_error")


def exits(p, student: str = "") -> Attempt:
    return Attempt(_defs(p, f"# {student}\nimport sys\nsys.exit(0)"), "failed", "exit")


def syntax_error(p, student: str = "") -> Attempt:
    return Attempt(f"# {student}\ndef {p.functions[0]}(:\n    return\n".encode(), "failed", "import_error")


def empty(p, student: str = "") -> Attempt:
    return Attempt(b"", "failed", "missing_function")


def binary(p, student: str = "") -> Attempt:
    return Attempt(bytes(range(256)) * 4, "failed", "import_error")


KINDS = {"right": right, "wrong": wrong, "stub": stub, "timeout": timeout, "memory_hog": memory_hog,
         "uses_reference": uses_reference, "kills_grader": kills_grader, "signals_grader": signals_grader, "reads_classmates": reads_classmates,
         "writes_gradebook": writes_gradebook, "exits": exits, "syntax_error": syntax_error,
         "empty": empty, "binary": binary}


@dataclass
class Student:
    sid: str
    files: dict = field(default_factory=dict)     # relative path -> bytes
    expected: dict = field(default_factory=dict)  # problem number -> Attempt (absent: missing)
    as_zip: bool = False
    submitted_at: str | None = None               # written to submitted_at.txt: the student's claim (never used)


def write_class(dest: Path, students: list) -> Path:
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for s in students:
        files = dict(s.files)
        if s.submitted_at:
            files["submitted_at.txt"] = s.submitted_at.encode()
        if s.as_zip:
            with zipfile.ZipFile(dest / f"{s.sid}.zip", "w") as zf:
                for rel, data in sorted(files.items()):
                    zf.writestr(zipfile.ZipInfo(rel, date_time=(2024, 5, 1, 12, 0, 0)), data)
        else:
            for rel, data in files.items():
                f = dest / s.sid / rel
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_bytes(data)
    return dest


def random_class(n: int, problems: list, seed: int = 0) -> list:
    """A class of n students with a realistic mix per problem: mostly right, some wrong,
    some not started or not handed in, a few broken, slow or over memory."""
    from grader import runner
    rng = random.Random(seed)
    probs = [runner.find(k) for k in problems]
    mix = [("right", 55), ("wrong", 15), ("stub", 10), ("missing", 10), ("syntax_error", 3),
           ("exits", 2), ("memory_hog", 2), ("timeout", 1), ("uses_reference", 2)]
    kinds, weights = zip(*mix)
    out = []
    for i in range(n):
        s = Student(f"student{i:03d}", as_zip=(i % 5 == 4))
        for p in probs:
            kind = rng.choices(kinds, weights)[0]
            if kind == "missing":
                continue
            a = KINDS[kind](p, s.sid)
            s.files[f"practice/{p.filename}"] = a.text
            s.expected[p.number] = a
        out.append(s)
    return out


def main(argv=None) -> int:
    from classroom.__main__ import _numbers
    ap = argparse.ArgumentParser(prog="python -m tests.synthetic_class",
                                 description="write a synthetic class of submissions")
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--problems", default="1-12")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    students = random_class(a.students, _numbers(a.problems), a.seed)
    write_class(Path(a.out), students)
    print(f"wrote {len(students)} students to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
