"""Find each student's practice files in a folder of submissions, and say what was matched.

    SUBMISSIONS/
      alice/                 a folder per student (a repo clone, an LMS download, ...)
        practice/p04_choose_path.py
      bob.zip                or a zip per student
      carol/P04_Choose_Path.py, carol/choose_path.py, carol/hw/p4.py ...

The student id is the folder name or the zip's name without ``.zip``, made safe
(``student_id``): letters, digits and ``_.@+-`` only (no control, newline or bidi
character), at most ``MAX_ID`` characters (a longer name keeps its start and a hash of
the whole). When entries come out the same, the one whose name already IS the id (the
folder ``honest1`` beside ``honest1!``) keeps it, and with it its roster row; every other
gets a hash of its own name added. Where none or several are that exact name, all of them
get one. Nobody is dropped, no work moves to another id, and every entry of such a group
is flagged for the teacher (``Submission.collision``, matching.md, the terminal). Every
name is read through ``shown.plain`` (escapes instead of control characters) and cut to
MAX_NAME characters; a submission keeps at most MAX_NOTES notes.

When a student handed in is the teacher's to say, never the student's: the times come
from a file the teacher adds (``teacher_times``: the LMS's export, one ``id,ISO time`` per
line; ``--submitted-at`` in the command line). A ``submitted_at.txt`` or
``.submitted_at`` inside the student's own folder or zip, and every file or zip-entry
time, are the student's to set: the first is shown as the student's claim
(``Submission.claimed_at``), none of them decides ``late``.
Inside, every ``.py`` file is a candidate, matched to a problem by its name (``RULES``,
best first):

  exact     p04_choose_path.py
  name      the same up to case and a copy suffix: P04_Choose_Path.py, p04_choose_path (1).py
  slug      choose_path.py
  number    p04.py, p4.py, problem4.py, problem_04.py
  contains  a name holding the problem's file name or slug: alice_p04_choose_path_v2.py

Notebooks (``.ipynb``) are matched by the same name rules and by the functions they
define, read statically and turned into a practice file, or refused with the reason
(notebooks.py). Files under the course's own folders (grader/, mlacourse/, kernels/: a
student who hands in a whole repo also hands in grader/problems/p04_choose_path/, the
judge's spec and its learner-style attempts) and
tool folders (.git, .venv, __pycache__, __MACOSX, ...) are never candidates. Among the
candidates for one problem the best rule wins, then a file that differs from the released
stub, then one inside a ``practice`` folder, then the shallower path, then the path in
alphabetical order -- so the choice never depends on the order the disk lists files in.
Every decision is recorded (``Submission.notes``) for the matching report.

Nothing from a submission is ever executed here; files are only read (zips in memory,
never extracted), with limits on sizes and counts so that a zip bomb or a huge folder
cannot exhaust the machine.
"""
from __future__ import annotations

import hashlib
import os
import re
import unicodedata
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from . import notebooks, shown

MAX_FILE_BYTES = 1 << 20        # a practice file larger than this is not graded
MAX_FILES = 5000                # entries looked at per submission
MAX_TOTAL_BYTES = 64 << 20      # bytes read per submission
SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "env", "__pycache__", "__MACOSX",
             ".ipynb_checkpoints", "node_modules", "site-packages", ".pytest_cache", ".hypothesis",
             ".idea", ".vscode"}
COURSE_DIRS = {"grader", "mlacourse", "kernels"}
SUBMITTED_AT_FILES = ("submitted_at.txt", ".submitted_at")
RULES = ("exact", "name", "slug", "number", "contains")
MAX_ID = 64                     # characters in a student id (results/<id>.json must be a valid name)
MAX_NAME = 300                  # characters of a file or entry name shown in a report
MAX_NOTES = 50                  # notes kept per submission (the rest are counted)
MAX_TIMES_BYTES = 4 << 20       # the teacher's times file
COPY_SUFFIX = re.compile(r"(\s*\(\d+\)|[ _-]+copy(?:[ _-]*\d+)?|[ _-]+v\d+|[ _-]+final|-\d+)$", re.I)


@dataclass
class Candidate:
    rel: str                 # path inside the submission (posix)
    data: bytes
    mtime: float | None      # seconds since the epoch (UTC), None when unknown: never trusted

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class Match:
    problem: int
    rel: str
    rule: str
    sha256: str
    data: bytes = field(repr=False)
    notes: list = field(default_factory=list)   # empty, binary, unchanged stub, ...
    notebook: object = None  # notebooks.Extraction when the file was rebuilt from a notebook


@dataclass
class Submission:
    student: str
    source: str                         # "alice/" or "bob.zip"
    matches: dict = field(default_factory=dict)    # problem number -> Match
    notes: list = field(default_factory=list)      # what was ignored and why
    submitted_at: datetime | None = None   # from the teacher's side only (teacher_times)
    submitted_at_source: str = ""       # "the teacher's times file", ""
    claimed_at: str = ""                # what a submitted_at.txt inside the submission says: shown, not used
    unreadable: str = ""                # why nothing could be read (a broken zip)
    entry: str = ""                     # the folder or zip name as found (printable)
    collision: str = ""                 # other entries read as the same id (the teacher must look)


# --------------------------------------------------------------------------- reading

def _skip(parts: tuple) -> str | None:
    for p in parts[:-1]:
        if p in SKIP_DIRS or (p.startswith(".") and p not in (".",)):
            return "tool folder"
        if p in COURSE_DIRS:
            return "course folder"
    return None


def read_folder(folder: Path, notes: list) -> list[Candidate]:
    """Candidates in a folder, walked in sorted order without following links, skipping
    tool and course folders without entering them (a .venv holds 100,000 files)."""
    out, total, seen = [], 0, 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if _skip((d, "")) is None)
        for name in sorted(filenames):
            seen += 1
            if seen > MAX_FILES:
                notes.append(f"more than {MAX_FILES} files: the rest were not looked at")
                return out
            path = Path(dirpath) / name
            rel = printable(path.relative_to(folder).as_posix())
            if path.is_symlink():
                if name.endswith(".py"):
                    notes.append(f"{rel}: a symbolic link, not graded")
                continue
            if not path.is_file():
                continue
            st = path.stat()
            got = _candidate(rel, st.st_size, lambda p=path: p.read_bytes(), st.st_mtime, notes)
            out.extend(got)
            total += sum(len(c.data) for c in got)
            if total > MAX_TOTAL_BYTES:
                notes.append(f"more than {MAX_TOTAL_BYTES >> 20} MB of Python files: the rest were not read")
                return out
    return out


def read_zip(path: Path, notes: list) -> list[Candidate]:
    out, total = [], 0
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_FILES:
            notes.append(f"the zip has {len(infos)} entries; only the first {MAX_FILES} were looked at")
        for info in sorted(infos[:MAX_FILES], key=lambda i: i.filename):
            if info.is_dir():
                continue
            rel = printable(PurePosixPath(info.filename.replace("\\", "/")).as_posix().lstrip("/"))
            mtime = datetime(*info.date_time).replace(tzinfo=timezone.utc).timestamp()
            if info.flag_bits & 0x1:
                if rel.endswith(".py"):
                    notes.append(f"{rel}: encrypted in the zip, not graded")
                continue
            got = _candidate(rel, info.file_size, lambda i=info: zf.open(i).read(_read_cap(i.filename)),
                             mtime, notes)
            out.extend(got)
            total += sum(len(c.data) for c in got)
            if total > MAX_TOTAL_BYTES:
                notes.append(f"more than {MAX_TOTAL_BYTES >> 20} MB of Python files: the rest were not read")
                break
    return out


def printable(text: str) -> str:
    """``text`` with every control, format (bidi, zero-width) or separator character other
    than a plain space written as an escape (\\n, \\u202e), cut to MAX_NAME characters:
    a name cannot forge a line, reorder what a report shows or fill it (shown.plain)."""
    return shown.cut(shown.plain(text), MAX_NAME)


def _read_cap(name: str) -> int:
    """Bytes read at most from one zip entry (its stated size may lie)."""
    return (notebooks.MAX_NOTEBOOK_BYTES if name.lower().endswith(".ipynb") else MAX_FILE_BYTES) + 1


def _candidate(rel, size, read, mtime, notes) -> list[Candidate]:
    rel = printable(rel)
    parts = tuple(rel.split("/"))
    name = parts[-1]
    if ".." in parts:
        notes.append(f"{rel}: a path that leaves its folder; ignored")
        return []
    if name in SUBMITTED_AT_FILES:
        return [Candidate(rel, read()[:200], mtime)]
    if name.lower().endswith(".ipynb") and not _skip(parts):   # read statically by notebooks.py
        if size > notebooks.MAX_NOTEBOOK_BYTES:
            notes.append(f"{rel}: a notebook of {size:,} bytes, over the {notebooks.MAX_NOTEBOOK_BYTES:,}-byte "
                         "limit; not graded")
            return []
        data = read()
        if len(data) > notebooks.MAX_NOTEBOOK_BYTES:
            notes.append(f"{rel}: over the {notebooks.MAX_NOTEBOOK_BYTES:,}-byte notebook limit; not graded")
            return []
        return [Candidate(rel, data, mtime)]
    if not name.lower().endswith(".py"):
        return []
    why = _skip(parts)
    if why:
        return []
    if size > MAX_FILE_BYTES:
        notes.append(f"{rel}: {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit; not graded")
        return []
    data = read()
    if len(data) > MAX_FILE_BYTES:
        notes.append(f"{rel}: over the {MAX_FILE_BYTES:,}-byte limit; not graded")
        return []
    return [Candidate(rel, data, mtime)]


# --------------------------------------------------------------------------- matching

def _norm(stem: str) -> str:
    s = stem.strip()
    prev = None
    while prev != s:
        prev, s = s, COPY_SUFFIX.sub("", s)
    return re.sub(r"[^0-9a-z]+", "_", s.lower()).strip("_")


def rule_for(name: str, problem) -> str | None:
    """Which rule (see RULES) matches file name ``name`` to ``problem``, or None."""
    if not name.lower().endswith(".py"):
        return None
    if name == problem.filename:
        return "exact"
    stem, n, slug = _norm(name[:-3]), problem.number, problem.slug
    canon = f"p{n:02d}_{slug}"
    if stem == canon or stem == f"p{n}_{slug}":
        return "name"
    if stem == slug:
        return "slug"
    numbers = {f"p{n:02d}", f"p{n}", f"problem{n}", f"problem{n:02d}", f"problem_{n}",
               f"problem_{n:02d}", f"ex{n}", f"ex{n:02d}", f"exercise{n}", f"exercise_{n}"}
    if stem in numbers:
        return "number"
    if re.search(rf"(^|_)({canon}|p{n}_{slug}|{slug})(_|$)", stem):
        return "contains"
    return None


def match(cands: list[Candidate], problems, stubs: dict) -> tuple[dict, list]:
    """{problem number: Match} and notes on what was not used. ``stubs``: {number: sha256}."""
    notes = []
    by_problem: dict = {}
    books = [c for c in cands if c.rel.lower().endswith(".ipynb")]
    cands = [c for c in cands if not c.rel.lower().endswith(".ipynb")]
    for c in cands:
        name = c.rel.rsplit("/", 1)[-1]
        if name in SUBMITTED_AT_FILES:
            continue
        hits = [(RULES.index(r), p) for p in problems if (r := rule_for(name, p))]
        if not hits:
            notes.append(f"{c.rel}: no problem has this name; not graded")
            continue
        best = min(h[0] for h in hits)
        top = [p for r, p in hits if r == best]
        if len(top) > 1:
            notes.append(f"{c.rel}: the name fits problems {', '.join(str(p.number) for p in top)}; not graded")
            continue
        by_problem.setdefault(top[0].number, []).append((best, c))
    out = {}
    for number, found in sorted(by_problem.items()):
        def key(item):
            rank, c = item
            parts = c.rel.split("/")
            return (rank, c.sha256 == stubs.get(number), "practice" not in parts[:-1], len(parts), c.rel)
        found.sort(key=key)
        rank, c = found[0]
        m = Match(number, c.rel, RULES[rank], c.sha256, c.data, content_notes(c.data, stubs.get(number)))
        for _, other in found[1:]:
            notes.append(f"{other.rel}: another file for problem {number}; {c.rel} was graded")
        out[number] = m
    out.update(notebook_matches(books, problems, out, stubs, notes))
    return dict(sorted(out.items())), notes


def content_notes(data: bytes, stub_sha: str | None) -> list[str]:
    if not data.strip():
        return ["empty file"]
    notes = []
    if b"\0" in data:
        notes.append("binary file (contains NUL bytes)")
    else:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            notes.append("not UTF-8 text")
    if stub_sha and hashlib.sha256(data).hexdigest() == stub_sha:
        notes.append("unchanged stub")
    return notes


# --------------------------------------------------------------------------- students

def student_id(name: str) -> str:
    """A safe id for a folder or zip name: NFC, runs of anything but letters, digits and
    ``_.@+-`` become "_", no leading dot, at most MAX_ID characters (a longer name keeps
    its start and the first 10 hex digits of its SHA-256)."""
    s = unicodedata.normalize("NFC", name.strip())
    s = "".join(ch if (ch.isalnum() and unicodedata.category(ch)[0] in "LN") or ch in "_.@+-" else " "
                for ch in s)
    s = re.sub(r"\s+", "_", s.strip()).lstrip(".")
    s = s or "student"
    if len(s) > MAX_ID:
        s = s[:MAX_ID - 11] + "-" + _digest(name)
    return s


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:10]


def claimed_time(cands: list[Candidate]) -> str:
    """What a submitted_at.txt (or .submitted_at) inside the submission says, as shown to
    the teacher: the student's claim, never used for ``late``."""
    for c in cands:
        if c.rel.rsplit("/", 1)[-1] in SUBMITTED_AT_FILES:
            text = c.data[:100].decode("utf-8", "replace").strip()
            return f"{c.rel} says {shown.plain(text)[:80]!s}"
    return ""


def teacher_times(path: Path) -> dict:
    """{student id or entry name: submission time} from the teacher's file: one
    ``id,time`` per line (ISO 8601; a header line, blank lines and # comments are
    skipped; a time without a zone is UTC). Raises ValueError on a line it cannot read."""
    import csv
    import io
    data = Path(path).read_bytes()
    if len(data) > MAX_TIMES_BYTES:
        raise ValueError(f"{path}: larger than {MAX_TIMES_BYTES >> 20} MB; one `id,time` per line expected")
    out = {}
    for n, row in enumerate(csv.reader(io.StringIO(data.decode("utf-8-sig", "replace"))), start=1):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 2:
            raise ValueError(f"{path}, line {n}: expected `id,time`, got {shown.plain(','.join(row))[:80]!r}")
        who, when = row[0].strip(), row[1].strip()
        try:
            t = datetime.fromisoformat(when.replace("Z", "+00:00"))
        except ValueError:
            if n == 1:   # a header
                continue
            raise ValueError(f"{path}, line {n}: {shown.plain(when)[:60]!r} is not an ISO 8601 time") from None
        out[who] = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return out


def _own_name(entry: Path, kind: str) -> str:
    return entry.name if kind == "folder" else entry.stem


def assign_ids(entries: list) -> tuple[list, list]:
    """([(entry, id, kind, collision note)], folder notes) for [(entry, safe id, kind)].
    An id several entries share goes to the one whose own name is exactly that id, if
    there is exactly one; the others (all of them otherwise) get a hash of their own name
    added (see the top). Every entry of such a group gets a note naming the others."""
    groups: dict = {}
    for entry, sid, kind in entries:
        groups.setdefault(sid, []).append((entry, kind))
    out, notes = [], []
    for entry, sid, kind in entries:
        members = groups[sid]
        if len(members) == 1:
            out.append((entry, sid, kind, ""))
            continue
        exact = [e for e, k in members if _own_name(e, k) == sid]
        keeps = len(exact) == 1 and exact[0] == entry
        new = sid if keeps else student_id(_own_name(entry, kind))[:MAX_ID - 11] + "-" + _digest(entry.name)
        others = ", ".join(printable(e.name) for e, _ in members if e != entry)
        note = (f"NAME COLLISION: {others} also read{'s' if len(members) == 2 else ''} as the id {sid}; "
                + (f"this entry is named exactly {sid} and keeps it" if keeps else f"graded as {new}")
                + " -- check that each entry is the student it seems to be")
        notes.append(f"{printable(entry.name)}: {note}")
        out.append((entry, new, kind, note))
    return out, notes


def discover(root: Path, problems, stubs: dict, roster: list | None = None,
             times: dict | None = None) -> tuple[list, list]:
    """([Submission], notes about the folder itself), students sorted by id. ``times``:
    the teacher's submission times (teacher_times), by id or by entry name."""
    root = Path(root)
    notes, subs = [], {}
    entries = []   # (entry, id, kind)
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name in SKIP_DIRS:
            continue
        if entry.is_dir() and not entry.is_symlink():
            entries.append((entry, student_id(entry.name), "folder"))
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            entries.append((entry, student_id(entry.stem), "zip"))
        else:
            notes.append(f"{printable(entry.name)}: not a folder or a .zip; ignored")
    assigned, more = assign_ids(entries)
    notes += more
    claimed = {}   # id -> the entries that collided on it (for a roster row left empty)
    for entry, sid, kind, collision in assigned:
        if collision:
            claimed.setdefault(student_id(_own_name(entry, kind)), []).append(printable(entry.name))
        if sid in subs:   # only if two names share a digest prefix: never silently merged
            raise ValueError(f"two submissions map to the student id {sid}; rename one of them")
        sub = Submission(sid, printable(entry.name) + "/", entry=printable(entry.name), collision=collision)
        if collision:
            sub.notes.append(collision)
        try:
            cands = read_folder(entry, sub.notes) if kind == "folder" else read_zip(entry, sub.notes)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as e:
            sub.unreadable = printable(f"{entry.name} could not be read ({type(e).__name__}: {e})")
            cands = []
        sub.matches, more = match(cands, problems, stubs)
        sub.notes += more
        if len(sub.notes) > MAX_NOTES:
            sub.notes[MAX_NOTES:] = [f"... and {len(sub.notes) - MAX_NOTES:,} more notes, not shown"]
        sub.claimed_at = claimed_time(cands)
        if times:
            at = times.get(sid, times.get(_own_name(entry, kind)))
            if at is not None:
                sub.submitted_at, sub.submitted_at_source = at, "the teacher's times file"
        subs[sid] = sub
    for sid in roster or []:
        sid = student_id(sid)
        if sid not in subs:
            why = "on the roster, no submission found"
            if sid in claimed:
                why += (f" under this id: the entries {', '.join(claimed[sid])} all read as {sid} and were "
                        "graded under ids of their own (NAME COLLISION: find hers among them)")
            subs[sid] = Submission(sid, "", notes=[why], collision=why if sid in claimed else "")
    extra = sorted(set(subs) - {student_id(s) for s in roster}) if roster else []
    for sid in extra:
        subs[sid].notes.append("not on the roster")
    return [subs[k] for k in sorted(subs)], notes



def notebook_matches(cands: list, problems, taken: dict, stubs: dict, notes: list) -> dict:
    """{problem number: Match} for the notebooks among ``cands`` (Candidates
    whose name ends in .ipynb), given the practice files already matched (``taken``):
    a notebook fills a problem that has no file, or only the unchanged stub."""
    chapters, _ = notebooks.course_functions()
    found: dict = {}
    for c in cands:
        name = c.rel.rsplit("/", 1)[-1]
        by_name = {}
        if name not in chapters:
            stem_py = name[:-len(".ipynb")] + ".py"
            hits = [(RULES.index(r), p) for p in problems if (r := rule_for(stem_py, p))]
            if hits:
                best = min(h[0] for h in hits)
                top = [p for r, p in hits if r == best]
                if len(top) == 1:
                    by_name[top[0].number] = RULES[best]
                else:
                    notes.append(f"{c.rel}: the name fits problems {', '.join(str(p.number) for p in top)}; "
                                 "matched by the functions it defines instead")
        # read in a child process with CPU and memory limits (notebooks.analyse_bounded)
        nb = notebooks.analyse_bounded(c.rel, c.data, problems, set(by_name))
        used = False
        for p in problems:
            rule = by_name.get(p.number)
            if rule is None and nb.defines.get(p.number):
                rule = "functions"
            if rule is None:
                continue
            used = True
            found.setdefault(p.number, []).append((c, nb, rule))
        if not used:
            why = f"not a readable notebook ({nb.error})" if nb.error else \
                "it defines none of the problems' functions at top level (or only the course's own)"
            notes.append(f"{c.rel}: notebook not graded: {why}")
    out = {}
    for p in problems:
        if p.number not in found:
            continue
        prior = taken.get(p.number)
        if prior is not None and "unchanged stub" not in prior.notes:
            for c, _, _ in found[p.number]:
                notes.append(f"{c.rel}: a notebook for problem {p.number}; the practice file {prior.rel} "
                             "was graded instead")
            continue
        tried = []
        for c, nb, rule in found[p.number]:
            ex = nb.extractions.get(p.number) or notebooks.Extraction(c.rel, p.number, refused=nb.error)
            rank = RULES.index(rule) if rule in RULES else len(RULES)
            parts = c.rel.split("/")
            tried.append(((bool(ex.refused), rank, "practice" not in parts[:-1], len(parts), c.rel), c, ex, rule))
        tried.sort(key=lambda t: t[0])
        _, c, ex, rule = tried[0]
        data = ex.data if not ex.refused else b""
        sha = hashlib.sha256(data if data else b"refused\0" + c.data).hexdigest()
        notes_m = list(ex.notes) if not ex.refused else [f"NOT GRADED: {ex.refused}"]
        m = Match(p.number, c.rel, f"notebook: {rule if rule in RULES else 'defines the functions'}",
                  sha, data, notes_m)
        m.notebook = ex
        for _, other, oex, _ in tried[1:]:
            why = f" (could not be used: {oex.refused})" if oex.refused else ""
            notes.append(f"{other.rel}: another notebook for problem {p.number}{why}; {c.rel} was used")
        if prior is not None:
            notes.append(f"{prior.rel}: the unchanged stub; the notebook {c.rel} was graded for "
                         f"problem {p.number} instead")
        out[p.number] = m
    return out


__all__ = ["Submission", "Match", "Candidate", "discover", "match", "rule_for", "content_notes",
           "student_id", "printable", "notebook_matches", "teacher_times", "claimed_time", "assign_ids",
           "RULES", "MAX_ID"]
