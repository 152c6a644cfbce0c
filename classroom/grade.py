"""Grade a whole class: every student's attempt at every problem, through the judge.

    python -m classroom grade SUBMISSIONS/ --out grades/ [--seed-file secret.txt]

Each attempt is graded by ``grader.runner.grade`` -- the judge itself: a fresh child
process per (attempt, problem) with the spec's time limit per case and memory cap, all
public and hidden cases, the verdict computed outside the child. Attempts run in
parallel on worker processes (pool.py: an attempt that kills the process grading it, or
outlives the sum of its cases' limits, loses that problem and nothing else), heaviest
first.

Reproducible and resumable. The hidden cases come from the teacher's seed (``--seed``,
``--seed-file``, ``$MLA_CLASS_SEED``, or the seed an earlier run in the same --out
recorded; a new one is drawn and recorded otherwise). Files are graded by content: an
attempt is identified by (problem, SHA-256 of the file), so identical files (the
unchanged stub, say) are graded once, and each verdict is cached on disk as soon as it
is known under a key of the seed and the judge's version (a hash of the judge, the specs,
the reference and the package versions). A run that is interrupted resumes where it
stopped; a second run on the same folder and seed writes byte-identical grades.

Untrusted code runs behind an operating-system boundary: each attempt in its own
bubblewrap sandbox (grader/jail.py) that shows it the interpreter, its packages, the child
runner and its own file -- not the course, the seed, the submissions, the grades, the
cache, HOME or any other process -- in a per-attempt cgroup (grader/limits.py).
``grade_class`` refuses to run without it unless the teacher says the files are her own
(``Settings.isolation = "process"``: ``--trust-submissions``). The cache is keyed by
what was graded -- (problem, SHA-256 of the staged file) -- and each record carries that
hash, checked when it is read back; nothing is ever written into the submissions folder.
An attempt whose grading machinery failed is "not graded (infrastructure)": reported,
never cached, graded again by the next run.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import jail, lang, limits, report, runner, seeds
from grader.records import CaseStatus, ProblemResult, Reason

from . import committed, notebooks, pool, shown, verdicts
from . import submissions as subs_mod

SEED_ENV = "MLA_CLASS_SEED"
FILE = "{FILE}"   # placeholder for the student's file in cached texts
SEED = "{SEED}"   # placeholder for the run's seed in cached texts: no record holds the seed
HIDDEN_SEED = "<seed>"   # what --hide-seed shows instead
MAX_SEED_FILE = 4096     # bytes read from a seed file (a seed is at most 78 digits)
NOT_GRADED = "not graded"   # a record's status when the machinery, not the attempt, failed


class SandboxMissing(RuntimeError):
    """Untrusted attempts and no operating-system sandbox on this machine."""


# --------------------------------------------------------------------------- settings

@dataclass
class Settings:
    seed: int
    seed_from: str
    problems: list                      # Problem specs to grade
    skipped: dict = field(default_factory=dict)   # number -> why not graded here
    points: dict = field(default_factory=dict)    # number -> points (default 1)
    workers: int = 0
    deadline: object = None             # datetime or None
    hide_seed: bool = False
    use_cache: bool = True
    roster: list | None = None
    isolation: str = "jail"             # "jail" (required for others' code) or "process" (trusted files)
    stubs: dict | None = None           # number -> sha256 of the committed stub (None: read them)
    times: dict | None = None           # the teacher's submission times (submissions.teacher_times)

    def points_for(self, number: int) -> float:
        return float(self.points.get(number, 1))


def resolve_seed(seed=None, seed_file=None, out: Path | None = None) -> tuple[int, str]:
    """(seed, where it came from). Order: --seed, --seed-file, $MLA_CLASS_SEED, the seed
    recorded in --out by an earlier run, else a new random one."""
    if seed is not None:
        return int(seed), "--seed"
    if seed_file:
        text = _read_small(Path(seed_file))
        return _parse_seed(text, f"--seed-file {seed_file}"), f"--seed-file {seed_file}"
    env = os.environ.get(SEED_ENV, "").strip()
    if env:
        return _parse_seed(env, f"${SEED_ENV}"), f"${SEED_ENV}"
    if out is not None and (Path(out) / "seed.txt").is_file():
        text = _read_small(Path(out) / "seed.txt")
        return _parse_seed(text, str(Path(out) / "seed.txt")), "seed.txt of an earlier run in --out"
    return seeds.draw(), "drawn at random (recorded in seed.txt)"


def _parse_seed(text: str, where: str) -> int:
    return seeds.parse(text, where)


def _read_small(path: Path) -> str:
    """The start of a seed file (read under a cap: it may be anything)."""
    with open(path, "rb") as f:
        return f.read(MAX_SEED_FILE).decode("utf-8", "replace").strip()


def seed_forms(seed: int, numbers=()) -> list[str]:
    """The ways a record could spell the run's seed: decimal and hex, and the same for
    each problem's stream (seeds.for_problem); only forms of 6 characters or more (a
    shorter seed is one that `grade` warns about: seeds.weak)."""
    values = [seed] + [seeds.for_problem(seed, n) for n in numbers]
    forms = []
    for v in values:
        forms += [str(v), f"{v:x}", f"{v:X}"]
    return sorted({f for f in forms if len(f) >= 6}, key=len, reverse=True)


def scrub_seed(obj, seed: int, numbers=(), mark: str = SEED):
    """A copy of plain data with every form of the seed (seed_forms) replaced by ``mark``,
    in every string: decimal forms where no digit is next to them, hex forms where no hex
    digit is (a 0x prefix stays, the digits go)."""
    import re
    forms = seed_forms(seed, numbers)
    if not forms:
        return obj
    pattern = re.compile("|".join(
        rf"(?<![0-9]){re.escape(f)}(?![0-9])" if f.isdigit() else rf"(?<![0-9a-fA-F]){re.escape(f)}(?![0-9a-fA-F])"
        for f in forms))

    def walk(x):
        if isinstance(x, str):
            return pattern.sub(mark, x)
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return walk(obj)


def show_seed(obj, seed: int, hide: bool, numbers=()):
    """A record as a report shows it: the SEED placeholder filled in, or, with ``hide``,
    every form of the seed (placeholder included) replaced by <seed>."""
    if not hide:
        return replace_strings(obj, {SEED: str(seed)})
    return scrub_seed(replace_strings(obj, {SEED: HIDDEN_SEED}), seed, numbers, HIDDEN_SEED)


def judge_version() -> str:
    """A hash of everything a verdict depends on besides the attempt and the seed: the
    judge, the specs, the reference, the record format, Python's and the packages' versions."""
    h = hashlib.sha256()
    root = runner.ROOT
    here = Path(__file__).resolve().parent   # the record format (record_of) lives here
    # every file below grader/ and mlacourse/ (sub-packages such as mlacourse/engine and
    # whatever a problem's folder holds included)
    files = sorted([*root.joinpath("grader").rglob("*.py"), *root.joinpath("mlacourse").rglob("*.py"),
                    here / "grade.py", here / "worker.py", here / "verdicts.py", here / "shown.py"])
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(platform.python_version().encode())
    for pkg in ("numpy", "torch", "triton"):
        try:
            h.update(f"{pkg}={importlib.metadata.version(pkg)}".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{pkg}=none".encode())
    return h.hexdigest()


def stub_hashes(problems, root: Path | None = None, warnings: list | None = None) -> dict:
    """{number: SHA-256 of the released stub}, from the last commit (committed.py): a stub
    the teacher edited in her checkout does not change what counts as "unchanged stub"."""
    root = Path(root) if root is not None else runner.ROOT
    files, _, warns = committed.files(root, [f"practice/{p.filename}" for p in problems])
    if warnings is not None:
        warnings.extend(warns)
    return {p.number: hashlib.sha256(files[f"practice/{p.filename}"]).hexdigest()
            for p in problems if f"practice/{p.filename}" in files}


# --------------------------------------------------------------------------- one attempt as data

def _first(outcomes):
    bad = [o for o in outcomes if o.status not in (CaseStatus.PASS, CaseStatus.NOT_RUN)]
    bad = bad or [o for o in outcomes if o.status is CaseStatus.NOT_RUN]
    return bad[0] if bad else None


def _case_summary(problem, o) -> dict | None:
    if o is None:
        return None
    names = {m.message: m.name for m in problem.mistakes}
    return {"name": o.case.name, "hidden": o.case.hidden, "function": o.case.function,
            "describe": o.case.describe, "status": str(o.status), "reason": o.reason,
            "message": o.message[:4000], "mistake": o.mistake,
            "mistake_name": names.get(o.mistake) if o.mistake else None,
            "output": (o.output or "")[:1000]}


def _english(fn, *args):
    """The judge's words in English whatever this machine's locale: the gradebook and its
    cache are the same bytes everywhere (grader/lang.py)."""
    with lang.speaking("en"):
        return fn(*args)


def record_of(r: ProblemResult, staged: Path | None) -> dict:
    """Everything the reports need from one graded attempt, as plain data, with the
    staged file's path replaced by FILE (one cached verdict serves every student who
    handed in the same file) and the seed by SEED (no record holds it in any form:
    scrub_seed), every text within its limit (verdicts.bound)."""
    p = r.problem
    r.path, r.given_path = FILE, True
    seed, r.seed = r.seed, (SEED if r.seed is not None else None)
    names = {m.message: m.name for m in p.mistakes}
    failing = [o for o in r.outcomes if o.status is CaseStatus.FAIL]
    reasons: dict = {}
    for o in r.outcomes:
        if o.status not in (CaseStatus.PASS,):
            reasons[o.reason] = reasons.get(o.reason, 0) + 1
    first = r.first_failure()
    rec = {
        "problem": p.number, "slug": p.slug, "status": str(r.status),
        "reason": r.reason or (first.reason if first else (Reason.PASSED if r.passed else "")),
        "message": r.message,
        "public": list(r.counts(False)), "hidden": list(r.counts(True)),
        "case_reasons": dict(sorted(reasons.items())),
        "mistakes": sorted({names.get(o.mistake, o.mistake) for o in failing if o.mistake}),
        "first": _case_summary(p, first),
        "first_public": _case_summary(p, _first([o for o in r.outcomes if not o.case.hidden])),
        "first_hidden": _case_summary(p, _first([o for o in r.outcomes if o.case.hidden])),
        "failure_text": _english(report.failure_text, r) if not r.passed else "",
        "test": _english(report.to_json, [r])["tests"][0],
        "output": r.output[:1000],
    }
    if staged is not None:
        rec = replace_strings(rec, {str(staged.resolve()): FILE, str(staged): FILE})
    if isinstance(seed, int):
        rec = scrub_seed(rec, seed, [p.number])
    return verdicts.bound(rec)


def replace_strings(obj, table: dict):
    """A copy of obj with every key of ``table`` replaced by its value in every string."""
    if isinstance(obj, str):
        for k, v in table.items():
            if k:
                obj = obj.replace(k, v)
        return obj
    if isinstance(obj, dict):
        return {k: replace_strings(v, table) for k, v in obj.items()}
    if isinstance(obj, list):
        return [replace_strings(v, table) for v in obj]
    return obj


def location_labels(submissions_dir: Path, out: Path) -> dict:
    """Where the class and the grades live is no part of a verdict: texts say <grades> and
    <submissions> instead (longest paths first, so a nested folder is named right)."""
    table = {}
    for path, label in ((out, "<grades>"), (submissions_dir, "<submissions>")):
        for variant in {str(path), os.path.realpath(path)}:
            table[variant] = label
    return dict(sorted(table.items(), key=lambda kv: -len(kv[0])))


def not_graded_record(problem, why: str, reason: Reason = Reason.INFRASTRUCTURE) -> dict:
    """What the reports say about an attempt the machinery failed to grade (never cached)."""
    r = ProblemResult(problem, FILE, given_path=True).broken(
        f"not graded: {why}. This is not the attempt's fault; run the same command again to "
        f"grade it.", reason)
    rec = record_of(r, None)
    rec["status"] = NOT_GRADED
    return rec


def read_cached(path: Path, key: tuple) -> dict | None:
    """The cached record for (problem, sha256), or None when there is none or it cannot be
    used (verdicts.load: too large, not JSON, a field wrong, the record of other bytes)."""
    return verdicts.load(path, key)[0]


def unusable_record(problem, why: str, sha: str) -> dict:
    """The verdict of an attempt whose freshly written record could not be used: the
    attempt's failure, with the reason (cached, so a rerun does not meet it again)."""
    r = ProblemResult(problem, FILE, given_path=True).broken(
        f"the grader could not use the verdict record of this attempt ({why}); it counts as "
        "failed. If this was your own file, tell your teacher.", verdicts.UNUSABLE)
    rec = record_of(r, None)
    rec["graded_sha256"] = sha
    return rec


def stage(work: Path, data: bytes, sha: str, filename: str) -> Path:
    """The attempt's bytes at work/<sha>/<filename>, rewritten unless already exactly them."""
    staged = work / sha[:24] / filename
    try:
        same = hashlib.sha256(staged.read_bytes()).hexdigest() == sha
    except OSError:
        same = False
    if not same:
        staged.parent.mkdir(parents=True, exist_ok=True)
        tmp = staged.with_name(staged.name + ".part")
        tmp.write_bytes(data)
        tmp.replace(staged)
    return staged


def isolation_line(isolation: str) -> str:
    if isolation == "jail":
        return f"sandbox: bubblewrap, {limits.describe()}"
    return "sandbox: NONE (--trust-submissions: the files are run as your user, with the judge's Python guard only)"


def missing_record(problem, expected: str) -> dict:
    r = ProblemResult(problem, expected, given_path=True).missing(
        f"no file for problem {problem.number} was found in the submission (looked for "
        f"{problem.filename}, {problem.slug}.py, p{problem.number}.py and similar names).")
    return record_of(r, None)


def refused_notebook_record(problem, ex: notebooks.Extraction) -> dict:
    """The verdict record of a notebook hand-in that cannot be graded (notebooks.py says why)."""
    r = ProblemResult(problem, FILE, given_path=True).broken(
        f"NOT GRADED: the notebook {shown.plain(ex.notebook)} could not be used for problem {problem.number} "
        f"({problem.slug}): {shown.plain(ex.refused)}. The grader never runs a notebook: it copies the "
        f"top-level functions a problem asks for and what they use into a practice file. Fix "
        f"the notebook, or hand in practice/{problem.filename}.", notebooks.REASON)
    return record_of(r, None)


# --------------------------------------------------------------------------- the class

@dataclass
class Graded:
    """One student: the submission and a record per problem (None: not graded here)."""
    sub: object
    records: dict = field(default_factory=dict)   # problem number -> record dict


@dataclass
class ClassResult:
    settings: Settings
    students: list                       # [Graded], sorted by id
    folder_notes: list
    version: str
    attempts: int = 0                    # distinct (problem, file) pairs
    graded_now: int = 0                  # of them, graded in this run (the rest: cache)
    elapsed: float = 0.0
    not_graded: int = 0                  # distinct attempts the machinery failed to grade


class _Progress:
    """tqdm when it is installed (a bar with an ETA), else a line every few seconds."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.t0, self.last = total, 0, time.monotonic(), 0.0
        self.bar = None
        self.enabled = enabled and total > 0
        if self.enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="attempt", desc="grading", dynamic_ncols=True,
                                file=sys.stderr, smoothing=0.1)
            except ImportError:
                self.bar = None

    def step(self):
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
            return
        now = time.monotonic()
        if now - self.last > 5 or self.done == self.total:
            rate = self.done / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate else 0
            print(f"grading: {self.done}/{self.total} attempts, {now - self.t0:.0f} s, "
                  f"ETA {eta:.0f} s", file=sys.stderr, flush=True)
            self.last = now

    def close(self):
        if self.bar is not None:
            self.bar.close()


def seed_tag(seed: int) -> str:
    """A name for the seed in folder names: 16 hex digits of a hash of it, never the seed."""
    return hashlib.sha256(b"mla-course cache folder\0" + seed.to_bytes(32, "big")).hexdigest()[:16]


def cache_dir(out: Path, settings: Settings, version: str) -> Path:
    return out / ".cache" / f"{version[:16]}-{seed_tag(settings.seed)}"


def grade_class(submissions_dir: Path, out: Path, settings: Settings, progress: bool = True,
                log=print) -> ClassResult:
    t0 = time.monotonic()
    submissions_dir, out = Path(submissions_dir).resolve(), Path(out).resolve()
    if out == submissions_dir or submissions_dir in out.parents:
        raise ValueError("--out must not be inside the submissions folder")
    if out in submissions_dir.parents:
        raise ValueError("the submissions folder must not be inside --out (the grades are rewritten there)")
    if settings.isolation == "jail" and not jail.available():
        raise SandboxMissing(f"no operating-system sandbox here ({jail.probe()}): submissions are "
                             f"untrusted code, so they are not graded without one. To get it, "
                             f"{jail.INSTALL_HINT}. To grade files you wrote yourself, add "
                             "--trust-submissions.")
    out.mkdir(parents=True, exist_ok=True)
    problems = settings.problems
    by_number = {p.number: p for p in problems}
    stubs = settings.stubs if settings.stubs is not None else stub_hashes(problems)
    students, folder_notes = subs_mod.discover(submissions_dir, problems, stubs, settings.roster, settings.times)
    version = judge_version()
    work = out / ".work"
    cache = cache_dir(out, settings, version)
    cache.mkdir(parents=True, exist_ok=True)

    # distinct attempts, staged by content (the bytes read from the submission, rewritten
    # whenever a staged copy is not exactly them)
    attempts: dict = {}   # (number, sha) -> staged path
    for s in students:
        for n, m in s.matches.items():
            if n not in by_number or notebooks.is_refused(m):   # a notebook that cannot be used
                continue
            key = (n, m.sha256)
            if key not in attempts:
                attempts[key] = stage(work, m.data, m.sha256, by_number[n].filename)

    def cache_file(key):
        return cache / f"p{key[0]:02d}-{key[1][:40]}.json"

    todo = [k for k in attempts if not (settings.use_cache and read_cached(cache_file(k), k) is not None)]
    todo.sort(key=lambda k: (0 if by_number[k[0]].needs_torch else 1, k))
    log(f"{len(students)} submissions, {len(attempts)} distinct attempts "
        f"({len(attempts) - len(todo)} already graded), seed "
        f"{'<hidden>' if settings.hide_seed else settings.seed} ({shown.terminal(settings.seed_from)}), "
        f"{settings.workers} workers; {isolation_line(settings.isolation)}")
    for s in students:
        if s.collision:
            log(f"warning: {shown.terminal(s.student)}: {shown.terminal(s.collision)}")
    bar = _Progress(len(todo), progress)
    budgets = {n: pool.budget_for(p) for n, p in by_number.items()}
    rename = location_labels(submissions_dir, out)
    for k in todo:   # a stale or foreign record must not stand in for this file's verdict
        cache_file(k).unlink(missing_ok=True)
    jobs = [pool.Job(k, k[0], str(attempts[k]), settings.seed, str(cache_file(k)),
                     [str(submissions_dir), str(out)], budgets[k[0]], rename, settings.isolation, k[1])
            for k in todo]
    graded_now = 0
    not_graded: dict = {}   # key -> record, kept in memory only

    def done(job):
        nonlocal graded_now
        graded_now += 1
        _, why = verdicts.load(Path(job.out), job.key)
        if why:   # the worker's record cannot be used: the attempt's failure, cached as such
            verdicts.write(Path(job.out), unusable_record(by_number[job.problem], why, job.key[1]))
        bar.step()

    def failed(job, why):
        reason = Reason.JUDGE_ERROR if why.startswith("the judge failed") else Reason.INFRASTRUCTURE
        not_graded[job.key] = not_graded_record(by_number[job.problem], why, reason)
        bar.step()

    (out / ".logs").mkdir(exist_ok=True)
    try:
        pool.run_jobs(jobs, settings.workers, done, failed, log_dir=out / ".logs")
    except KeyboardInterrupt:
        bar.close()
        log(f"\ninterrupted: {graded_now} attempts graded in this run are cached in {cache}; "
            "run the same command again to go on from there.")
        raise
    bar.close()

    graded = []
    loaded: dict = {}   # key -> its record: one copy in memory per distinct attempt
    for s in students:
        g = Graded(s)
        for p in problems:
            m = s.matches.get(p.number)
            key = (p.number, m.sha256) if m is not None else None
            if m is None:
                g.records[p.number] = missing_record(p, p.filename)
            elif notebooks.is_refused(m):
                g.records[p.number] = refused_notebook_record(p, m.notebook)
            elif key in not_graded:
                g.records[p.number] = not_graded[key]
            else:
                if key not in loaded:
                    loaded[key] = read_cached(cache_file(key), key)
                rec = loaded[key]
                if rec is None:
                    rec = not_graded[key] = not_graded_record(
                        p, "its verdict was not found in the cache after grading", Reason.INFRASTRUCTURE)
                elif m.notebook is not None:   # the judge's line numbers -> the notebook's cells
                    rec = notebooks.relabel(rec, m.notebook, p.filename)
                g.records[p.number] = rec
        graded.append(g)
    return ClassResult(settings, graded, folder_notes, version, len(attempts), graded_now,
                       time.monotonic() - t0, not_graded=len(not_graded))


__all__ = ["Settings", "ClassResult", "Graded", "grade_class", "resolve_seed", "judge_version",
           "record_of", "not_graded_record", "missing_record", "replace_strings", "read_cached",
           "stub_hashes", "SandboxMissing", "FILE", "SEED_ENV", "NOT_GRADED"]
