"""Grade the hidden corpus of learner attempts with the judge and list the holes.

    .venv/bin/python tests/corpus/probe.py                 # every problem, seeds 1 2 3
    .venv/bin/python tests/corpus/probe.py -p 4,5 -s 1     # some problems, one seed
    .venv/bin/python tests/corpus/probe.py --lint          # only check the file headers
    .venv/bin/python tests/corpus/probe.py --since main --judge ../main -s 0-9
        # the attempts added since git ref `main`, graded by another checkout's judge.py

The attempts are each problem's corpus (grader/problems/pNN_slug/corpus/: whole files, and
the entries of corpus/wrong.diff) and its named mistakes (the entries of mistakes.diff: each
is a wrong attempt that the judge must name as itself). Every attempt is graded from a copy in
a temporary folder outside the course, where a learner's file lives too (a slip file's
entries expanded there: grader/slips.py; an attempt that looks for the course from its own
folder finds what a learner's would), exactly as a teacher would: ``judge.py N --file PATH
--seed S`` (exit code 0 means it passed). A HOLE is a file marked ``expect: fail`` that
passes on some seed; a FALSE FAIL is a file marked ``expect: pass`` that fails on some
seed. For files whose header names a ``mistake:``, the table also shows which mistake the
judge named on the first failing seed ("-" when it named none), so a wrong or missing
"Likely slip" line shows up too.

The judge's own files must not change while the corpus runs (some attempts try to
tamper with them); the probe compares ``git status`` of those paths before and after and
reports any change.
"""
from __future__ import annotations

import argparse
import atexit
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))  # the probe runs from anywhere
from grader import problems as layout, slips  # noqa: E402
from grader.spec import MISTAKE_KEYS, read_header  # noqa: E402
PROBLEMS_DIR = ROOT / "grader" / "problems"   # one folder per problem (a test may point it elsewhere)
KEYS = ("expect", "slip", "mistake", "reason")
REASONS = {"uses_reference", "timeout", "memory", "exit", "crash", "wrong_type", "wrong_shape",
           "not_finite", "mutated_input", "no_kernel", "tamper"}
GUARDED = ["grader", "mlacourse", "solutions", "practice", "kernels", "judge.py"]


@dataclass
class Attempt:
    path: Path                # the file to grade (an entry of a slip file: its expansion)
    number: int
    slug: str
    expect: str
    slip: str
    mistake: str | None = None
    reason: str | None = None
    runs: dict = field(default_factory=dict)  # seed -> (passed, named mistake, first line)
    is_named_mistake: bool = False   # an entry of mistakes.diff, not a corpus attempt
    stored: str = ""                 # where it is written: "p02_rope_scores/corpus/wrong.diff"

    @property
    def name(self) -> str:
        where = f"p{self.number:02d}_{self.slug}/{self.path.name}"
        return f"mistakes/{where}" if self.is_named_mistake else where


def parse_header(path: Path) -> dict:
    """The ``key: value`` lines at the top of the file's docstring."""
    return read_header(path, KEYS)


_EXPANDED: list = []   # the temporary folder the slip files' entries are written to, once


def expanded_folder() -> Path:
    """A temporary folder for the expansions of slip files, removed when the process ends."""
    if not _EXPANDED:
        folder = Path(tempfile.mkdtemp(prefix="mla-attempts-"))
        atexit.register(shutil.rmtree, folder, True)
        _EXPANDED.append(folder)
    return _EXPANDED[0]


BASE_SLIP = "none: a right answer, the base the slip files change"


def _whole_bases(home: Path) -> list[Path]:
    """The folder's bases (learner*.py) that define every function its problem asks for:
    right answers, graded like the corpus's."""
    import ast
    spec = next((p for p in _specs() if p.stem == home.name), None)
    out = []
    for base in sorted(home.glob("learner*.py")):
        defs = {n.name for n in ast.parse(base.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)}
        if spec is not None and set(spec.functions) <= defs:
            out.append(base)
    return out


def _specs():
    from grader import runner
    return runner.discover()


def attempts(problems=None) -> list[Attempt]:
    """Every attempt: each problem's corpus (its whole files, then the entries of
    corpus/wrong.diff, then its bases that answer the whole problem: learner.py), then its
    named mistakes (a wrong attempt whose header names itself), optionally only some
    problem numbers."""
    found = []
    for home in sorted(PROBLEMS_DIR.glob("p[0-9][0-9]_*/")):
        number, slug = int(home.name[1:3]), home.name[4:]
        if problems and number not in problems:
            continue
        corpus, copies = home / layout.CORPUS, expanded_folder() / "corpus" / home.name
        copies.mkdir(parents=True, exist_ok=True)
        for base in _whole_bases(home):
            shutil.copyfile(base, copies / base.name)
            found.append(Attempt(copies / base.name, number, slug, "pass", BASE_SLIP, stored=_rel(base)))
        files = []
        for path in sorted(corpus.glob("*.py")) if corpus.is_dir() else []:
            shutil.copyfile(path, copies / path.name)
            files.append((copies / path.name, path))
        slipped = home / layout.CORPUS_SLIPS
        if slipped.is_file():
            files += [(path, slipped) for path in slips.materialise(slipped, copies)]
        for path, stored in files:
            h = parse_header(path)
            found.append(Attempt(path, number, slug, h.get("expect", ""), h.get("slip", ""),
                                 h.get("mistake"), h.get("reason"), stored=_rel(stored)))
    for home in sorted(PROBLEMS_DIR.glob("p[0-9][0-9]_*/")):
        number, slug = int(home.name[1:3]), home.name[4:]
        if (problems and number not in problems) or not (home / layout.MISTAKES).is_file():
            continue
        for path in slips.materialise(home / layout.MISTAKES, expanded_folder() / "mistakes" / home.name):
            h = read_header(path, MISTAKE_KEYS)
            found.append(Attempt(path, number, slug, "fail", h.get("message", ""), h.get("mistake"),
                                 h.get("reason"), is_named_mistake=True,
                                 stored=_rel(home / layout.MISTAKES)))
    return found


def _rel(path: Path) -> str:
    return f"{path.parent.name}/{path.name}" if path.parent.name != layout.CORPUS else \
        f"{path.parent.parent.name}/{layout.CORPUS}/{path.name}"


def lint(items, specs) -> list[str]:
    """Header problems: missing keys, names that do not match the file, unknown mistakes.
    (A named mistake's own header is checked where its spec loads it: grader.spec.load_mistakes.)"""
    bad = []
    for a in items:
        spec = specs.get(a.number)
        if spec is None:
            bad.append(f"{a.name}: no problem {a.number}")
            continue
        if spec.slug != a.slug:
            bad.append(f"{a.name}: folder slug {a.slug!r} but problem {a.number} is {spec.slug!r}")
            continue
        if a.reason and a.reason not in REASONS:
            bad.append(f"{a.name}: unknown reason {a.reason!r}")
        if a.mistake and a.mistake not in {m.name for m in spec.mistakes}:
            bad.append(f"{a.name}: mistake {a.mistake!r} is not among problem {a.number}'s named "
                       f"mistakes (grader/problems/{spec.stem}/{layout.MISTAKES})")
        if a.is_named_mistake or a.slip == BASE_SLIP:
            continue
        want = "pass" if a.path.name.startswith("right_") else "fail"
        if not a.path.name.startswith(("right_", "wrong_")):
            bad.append(f"{a.name}: file name must start with right_ or wrong_")
        if a.expect != want:
            bad.append(f"{a.name}: 'expect: {a.expect}' but the file name says {want}")
        if not a.slip:
            bad.append(f"{a.name}: no 'slip:' line")
    return bad


MIN_RIGHT, MIN_WRONG = 4, 12   # per problem, its bases and named mistakes included


def stray_folders(specs) -> list[str]:
    """The folders of PROBLEMS_DIR that are no problem's (``specs``: {number: Problem})."""
    stems = {p.stem for p in specs.values()}
    return sorted(f.name for f in PROBLEMS_DIR.iterdir() if f.is_dir() and f.name != "__pycache__"
                  and f.name not in stems)


def shortfall(number: int, specs, items) -> str | None:
    """Why problem ``number`` has too few right or wrong attempts among ``items`` (None: enough)."""
    mine = [a for a in items if a.number == number]
    right = sum(a.expect == "pass" for a in mine)
    wrong = sum(a.expect == "fail" for a in mine)
    if right >= MIN_RIGHT and wrong >= MIN_WRONG:
        return None
    return (f"problem {number} has {right} right and {wrong} wrong attempts (its learner base and named "
            f"mistakes included); it needs at least {MIN_RIGHT} right and {MIN_WRONG} wrong in "
            f"grader/problems/{specs[number].stem}/corpus/")


def added_since(ref: str) -> set:
    """Names ("p02_rope_scores/wrong_x.py") of the corpus attempts that git ref `ref` does
    not have (committed or not): whole files and slip files' entries."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout
    had = set()
    for rel in git("ls-tree", "-r", "--name-only", ref, "--", "grader/problems").split():
        parts = rel.split("/")
        if len(parts) == 5 and parts[3] == layout.CORPUS and rel.endswith(".py"):
            had.add(f"{parts[2]}/{parts[4]}")                         # grader/problems/pNN/corpus/x.py
        elif len(parts) == 4 and parts[3].startswith("learner") and rel.endswith(".py"):
            had.add(f"{parts[2]}/{parts[3]}")                         # a base graded as a right attempt
        elif rel.endswith(layout.CORPUS_SLIPS):
            had |= {f"{parts[2]}/{e.name}" for e in slips.parse(git("show", f"{ref}:{rel}"), rel)}
    return {a.name for a in attempts() if not a.is_named_mistake} - had


def run_one(a: Attempt, seed: int, specs, judge: Path = ROOT) -> None:
    path = str(a.path)
    cmd = [sys.executable, str(judge / "judge.py"), str(a.number), "--file", path, "--seed", str(seed)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=judge)
        text, passed = p.stdout + p.stderr, p.returncode == 0
    except subprocess.TimeoutExpired:
        text, passed = "probe: the judge itself did not finish in 900 s", False
    named = None
    m = re.search(r"Likely (?:slip|cause): (.*)", text)
    if m:
        msg = m.group(1).strip()
        named = next((x.name for x in specs[a.number].mistakes if x.message.startswith(msg[:60])),
                     msg[:40] + "...")
    a.runs[seed] = (passed, named, classify(text))


WHY = [  # (text in the judge's report, short tag), first match wins
    ("could not be imported", "import_error"), ("could not be loaded", "import_failed"),
    ("still running after", "timeout"), ("out of memory", "memory"),
    ("tried to stop the program", "exit"), ("ended (exit code", "exit"),
    ("crashed", "crash"), ("modified its input", "mutated_input"),
    ("changed its input in place", "mutated_input"), ("your kernel did not write", "no_kernel"),
    ("without launching a Triton kernel", "no_kernel"), ("not what your kernel wrote", "no_kernel"),
    ("raised an exception", "exception"), ("returned shape", "wrong_shape"),
    ("NaN and", "not_finite"), ("is nan", "not_finite"), ("is inf", "not_finite"),
    ("is -inf", "not_finite"), ("of your result is NaN", "not_finite"),
    ("returned keys", "wrong_type"), ("returned None", "wrong_type"),
    ("should be a number", "wrong_type"), ("should return", "wrong_type"),
    ("must be one of", "wrong_type"), ("returned a ", "wrong_type"),
    ("returned an ", "wrong_type"), ("defines no function", "missing_function"),
    ("does not match the reference", "mismatch"), ("expected", "mismatch"),
]


def classify(text: str) -> str:
    """A short tag for the judge's first failure (empty when it passed)."""
    if "PASSED" in text:
        return ""
    body = text.split("First failure", 1)[-1] if "First failure" in text else text
    return next((tag for key, tag in WHY if key in body), "?")


def git_status() -> str:
    try:
        return subprocess.run(["git", "status", "--porcelain", "--", *GUARDED], cwd=ROOT,
                              capture_output=True, text=True).stdout
    except OSError:
        return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-p", "--problems", help="comma-separated problem numbers (default: all)")
    ap.add_argument("-s", "--seeds", default="1,2,3",
                    help="seeds: a list and/or ranges, e.g. 1,2,3 or 1-30 (default 1,2,3)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="judges run at once (default 2)")
    ap.add_argument("-k", "--match", help="only files whose name contains this text")
    ap.add_argument("--lint", action="store_true", help="only check the headers")
    ap.add_argument("--since", help="only the attempts added since this git ref (e.g. main)")
    ap.add_argument("--judge", default=str(ROOT),
                    help="the checkout whose judge.py grades (default: this one), to count the "
                         "holes of another version of the judge")
    args = ap.parse_args(argv)
    judge = Path(args.judge).resolve()

    from grader.runner import discover
    specs = {p.number: p for p in discover()}
    problems = {int(x) for x in args.problems.split(",")} if args.problems else None
    items = [a for a in attempts(problems) if not args.match or args.match in a.name]
    if args.since:
        new = added_since(args.since)
        items = [a for a in items if a.name in new]
    bad = lint(items, specs)
    for line in bad:
        print("LINT", line)
    if args.lint:
        print(f"{len(items)} attempts, {len(bad)} header problems")
        return 1 if bad else 0

    seeds = []
    for part in args.seeds.split(","):
        lo, _, hi = part.partition("-")
        seeds += list(range(int(lo), int(hi or lo) + 1))
    before = git_status()
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda pair: run_one(pair[0], pair[1], specs, judge), [(a, s) for a in items for s in seeds]))
    after = git_status()

    holes, false_fails, named_wrong = [], [], []
    print(f"{'attempt':58} {'expect':6} {'passed on':10} {'verdict':10} {'why (seed ' + str(seeds[0]) + ')':15} named mistake")
    for a in items:
        passed_on = [s for s in seeds if a.runs[s][0]]
        ok = (not passed_on) if a.expect == "fail" else (len(passed_on) == len(seeds))
        verdict = "ok" if ok else ("HOLE" if a.expect == "fail" else "FALSE-FAIL")
        fail_seeds = [s for s in seeds if not a.runs[s][0]]
        named = a.runs[fail_seeds[0]][1] if fail_seeds else None
        note = ""
        if a.mistake:
            note = f"{named or '-'}" + ("" if named == a.mistake else f"   (header: {a.mistake})")
            if fail_seeds and named != a.mistake:
                named_wrong.append((a, named))
        elif named:
            note = f"{named}   (header names none)"
            named_wrong.append((a, named))
        why = a.runs[seeds[0]][2]
        print(f"{a.name:58} {a.expect:6} {','.join(map(str, passed_on)) or '-':10} {verdict:10} {why:15} {note}")
        if verdict == "HOLE":
            holes.append((a, passed_on))
        elif verdict == "FALSE-FAIL":
            false_fails.append((a, fail_seeds))

    print()
    print("per problem (right / wrong files; holes; false fails):")
    for n in sorted({a.number for a in items}):
        mine = [a for a in items if a.number == n]
        r = sum(a.expect == "pass" for a in mine)
        print(f"  p{n:02d} {specs[n].slug:20} {r:3} right {len(mine) - r:3} wrong   "
              f"{sum(h[0].number == n for h in holes):3} holes {sum(f[0].number == n for f in false_fails):3} "
              f"false fails")
    print()
    print(f"HOLES (a wrong attempt passed): {len(holes)}")
    for a, on in holes:
        print(f"  {a.name}  seeds {','.join(map(str, on))}: {a.slip}")
    print(f"FALSE FAILS (a right attempt failed): {len(false_fails)}")
    for a, on in false_fails:
        print(f"  {a.name}  seeds {','.join(map(str, on))}: failed with {a.runs[on[0]][2]}")
    print(f"MISTAKE NAMING that differs from the header: {len(named_wrong)}")
    for a, named in named_wrong:
        print(f"  {a.name}: judge named {named or 'none'}, header says {a.mistake or 'none'}")
    if before != after:
        print("TAMPER: the judge's files changed while the corpus ran:")
        print(textwrap.indent(after, "  "))
    print(f"\n{len(items)} attempts x {len(seeds)} seeds in {time.monotonic() - t0:.0f} s"
          + (f", graded by {judge / 'judge.py'}" if judge != ROOT else ""))
    return 1 if holes or false_fails or before != after or bad else 0


if __name__ == "__main__":
    sys.exit(main())
