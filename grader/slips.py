"""Learner files written as the small change they are: a slip file, and its expansion.

A problem's named mistakes (grader/problems/pNN_slug/mistakes.diff) and the corpus's wrong
attempts that are near-copies of a right one (.../corpus/wrong.diff) are each a learner's
whole file in the judge's eyes, but most of each file is the same right code. A slip file
stores each of them once, as its docstring and its change to a base -- a whole file of the
same folder (``learner.py``, or a right attempt of the corpus) -- so that a contract change
(a new argument, a renamed function) is made once, in the base, and every entry follows:

    # free comments (lines that start with "#") before the first entry

    === scale_by_d_nope.py
    mistake: scale by d_nope
    message: You scaled by 1/sqrt(d_nope); the dot product runs over d_nope + d_rope dims.
    @@
    -    return s / np.sqrt(q_nope.shape[1] + q_rope.shape[1])
    +    return s / np.sqrt(q_nope.shape[1])            # the rope dims are left out

    === wrong_memo_by_shape.py from corpus/right_per_head_loops.py
    ...

``=== NAME`` starts an entry: NAME is the file it expands to; ``from BASE`` names its base,
relative to the problem's folder (default: ``learner.py``; ``from solution``: the model
answer, solutions/pNN_slug.py). The lines up to the first
``@@`` are the file's docstring, verbatim (``mistake:``/``message:`` or ``expect:``/``slip:``
headers). Each ``@@`` starts a change: lines `` context`` (a blank line is blank context),
``-removed`` and ``+added``. The context and removed lines, in order, must stand exactly
once in the base's code; they are replaced by the context and added lines. ``@@ top``
starts a change of added lines only, put before the code's first line (an import). Changes do not
depend on line numbers, so an edit elsewhere in the base leaves them valid; an edit to the
lines a change touches makes the expansion fail with the entry's name (never a silent
other file). A file expands to ``'\"\"\"' + docstring + '\\n\"\"\"\\n' + the changed code``,
where the code is the base's text after its own docstring.

Not a patch for ``git apply``: each entry is its own file. ``make_entry`` writes an entry
from a whole file (the smallest unique context), ``expand`` and ``materialise`` write
files back; the judge runs an expansion in memory (spec.load_mistakes), the tests and the
corpus probe grade materialised copies in a temporary folder. A student edition ships
neither slip files nor bases nor expansions (classroom/release.py: the recorded answers).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_BASE = "learner.py"
_ENTRY = re.compile(r"^=== (\S+\.py)(?: from (\S+\.py|solution))?\s*$")
SOLUTION = "solution"   # the base "solution": the model answer, solutions/<the folder's name>.py
_DOC = re.compile(r'"""(.*?)\n"""\n', re.S)


class SlipError(ValueError):
    """A slip file that cannot be read, or an entry that no longer applies to its base."""


@dataclass
class Change:
    """One ``@@`` block: ``old`` (context and removed lines, in order) becomes ``new``."""
    lines: list            # [(" " | "-" | "+", text)]
    top: bool = False      # "@@ top": added lines before the code's first line

    @property
    def old(self) -> list:
        return [t for k, t in self.lines if k != "+"]

    @property
    def new(self) -> list:
        return [t for k, t in self.lines if k != "-"]


@dataclass
class Entry:
    name: str              # the file it expands to: "scale_by_d_nope.py"
    base: str              # its base, relative to the problem's folder
    docstring: str         # verbatim, without the quotes
    changes: list = field(default_factory=list)
    where: str = ""        # "p02_rope_scores/mistakes.diff:12", for messages

    def text(self) -> str:
        """The entry as the slip file writes it."""
        head = f"=== {self.name}" + ("" if self.base == DEFAULT_BASE else f" from {self.base}")
        out = [head, self.docstring]
        for ch in self.changes:
            out.append("@@ top" if ch.top else "@@")
            out += [f"{k}{t}" if (k != " " or t) else "" for k, t in ch.lines]
        return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- reading

def code_of(text: str) -> str:
    """A learner file's code: the text after its opening docstring (all of it if none)."""
    m = _DOC.match(text)
    return text[m.end():] if m else text


def docstring_of(text: str) -> str | None:
    m = _DOC.match(text)
    return m.group(1) if m else None


def parse(text: str, where: str = "<slips>") -> list[Entry]:
    """The entries of a slip file's text (see the top)."""
    entries: list[Entry] = []
    doc: list | None = None
    current: Entry | None = None
    for n, line in enumerate(text.split("\n"), 1):
        m = _ENTRY.match(line)
        if m:
            _finish(current, doc)
            current = Entry(m.group(1), m.group(2) or DEFAULT_BASE, "", [], f"{where}:{n}")
            doc = []
            entries.append(current)
        elif current is None:
            if line.strip() and not line.startswith("#"):
                raise SlipError(f"{where}:{n}: before the first '=== name.py' only '#' comments may stand")
        elif line.startswith("@@"):
            _finish(current, doc)
            doc = None
            current.changes.append(Change([], top=line.strip() == "@@ top"))
        elif doc is not None:
            doc.append(line)
        elif line == "" or line[0] in " -+":
            current.changes[-1].lines.append((line[:1] or " ", line[1:]))
        else:
            raise SlipError(f"{where}:{n}: a change's line starts with ' ', '-' or '+' (got {line[:40]!r})")
    _finish(current, doc)
    names = [e.name for e in entries]
    twice = sorted({x for x in names if names.count(x) > 1})
    if twice:
        raise SlipError(f"{where}: entries named twice: {twice}")
    return entries


def _finish(entry: Entry | None, doc: list | None) -> None:
    """Close the entry's docstring (blank lines at its end separate entries) and drop the
    blank context lines that end each change (blank lines before the next entry)."""
    if entry is None:
        return
    if doc is not None:
        while doc and not doc[-1].strip():
            doc.pop()
        entry.docstring = "\n".join(doc)
    for ch in entry.changes:
        while ch.lines and ch.lines[-1] == (" ", ""):
            ch.lines.pop()


def read(path: Path) -> list[Entry]:
    path = Path(path)
    return parse(path.read_text(encoding="utf-8"), f"{path.parent.name}/{path.name}")


# --------------------------------------------------------------------------- expanding

def _find(haystack: list, needle: list) -> list[int]:
    n = len(needle)
    return [i for i in range(len(haystack) - n + 1) if haystack[i:i + n] == needle]


def apply(code: str, changes: list, where: str = "", base: str = "") -> str:
    """``code`` with every change made; SlipError (naming ``where``) when a change's lines
    are missing from the base, stand there more than once, or overlap another change's."""
    lines = code.split("\n")
    spans = []
    for i, ch in enumerate(changes, 1):
        if ch.top:
            if ch.old:
                raise SlipError(f"{where}: change {i} ('@@ top') may only add lines")
            spans.append((0, 0, ch.new, i))
            continue
        if not ch.old:
            raise SlipError(f"{where}: change {i} has no context or removed line to stand on")
        hits = _find(lines, ch.old)
        if len(hits) != 1:
            what = "are not in" if not hits else f"stand {len(hits)} times in"
            raise SlipError(f"{where}: the lines change {i} replaces {what} {base or 'its base'} "
                            f"(first: {ch.old[0].strip()[:60]!r}); the base changed there: rewrite the change")
        spans.append((hits[0], hits[0] + len(ch.old), ch.new, i))
    spans.sort()
    for (a0, a1, _, i), (b0, _, _, j) in zip(spans, spans[1:]):
        if b0 < a1:
            raise SlipError(f"{where}: changes {i} and {j} overlap in {base or 'its base'}")
    for start, end, new, _ in reversed(spans):
        lines[start:end] = new
    return "\n".join(lines)


def base_path(home: Path, base: str) -> Path:
    """The file a base names: relative to the problem's folder, or the model answer."""
    home = Path(home)
    return home.parents[2] / "solutions" / f"{home.name}.py" if base == SOLUTION else home / base


def expand(entry: Entry, home: Path) -> str:
    """The whole learner file ``entry`` stands for: its docstring, then its base's code with
    the entry's changes."""
    base = base_path(home, entry.base)
    if not base.is_file():
        raise SlipError(f"{entry.where}: its base {entry.base} is not in {Path(home).name}/")
    code = apply(code_of(base.read_text(encoding="utf-8")), entry.changes, f"{entry.where} ({entry.name})",
                 entry.base)
    return f'"""{entry.docstring}\n"""\n{code}'


def materialise(slip_file: Path, dest: Path) -> list[Path]:
    """Every entry of ``slip_file`` written as a file in ``dest`` (created); their paths."""
    slip_file = Path(slip_file)
    home = problem_folder(slip_file)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for e in read(slip_file):
        path = dest / e.name
        path.write_text(expand(e, home), encoding="utf-8")
        out.append(path)
    return out


def problem_folder(slip_file: Path) -> Path:
    """The problem's folder a slip file's bases are named from (corpus/wrong.diff: its parent)."""
    slip_file = Path(slip_file)
    return slip_file.parent.parent if slip_file.parent.name == "corpus" else slip_file.parent


# --------------------------------------------------------------------------- writing

def make_entry(name: str, text: str, base_name: str, base_text: str) -> Entry:
    """The entry that expands to ``text`` (a whole learner file with a docstring) from the
    base ``base_name`` (whose text is ``base_text``): each changed run of lines with the
    least context that makes it stand once in the base, context taken after the change
    before it is taken before it (so the ``def`` line above stays free to change)."""
    doc = docstring_of(text)
    if doc is None:
        raise SlipError(f"{name}: a learner file opens with a docstring (its header)")
    a, b = code_of(base_text).split("\n"), code_of(text).split("\n")
    windows, top = [], None
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "insert" and i1 == 0:
            top = Change([("+", x) for x in b[j1:j2]], top=True)
        elif tag != "equal":
            s, e = _context(a, i1, i2)
            windows.append([s, e, [(i1, i2, j1, j2)]])
    merged: list = []
    for w in windows:
        if merged and w[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], w[1])
            merged[-1][2] += w[2]
        else:
            merged.append(w)
    changes = []
    for s, e, ops in merged:
        lines, at = [], s
        for i1, i2, j1, j2 in ops:
            lines += [(" ", t) for t in a[at:i1]]
            lines += [("-", t) for t in a[i1:i2]] + [("+", t) for t in b[j1:j2]]
            at = i2
        lines += [(" ", t) for t in a[at:e]]
        changes.append(Change(lines))
    if top is not None:
        changes.insert(0, top)
    entry = Entry(name, base_name, doc, changes, name)
    if apply("\n".join(a), changes, name, base_name) != "\n".join(b):
        raise SlipError(f"{name}: its entry does not expand back to the file")
    return entry


_DEF = re.compile(r"^(?:async\s+)?def\s")


def _context(a: list, i1: int, i2: int) -> tuple[int, int]:
    """The smallest window [s, e) around a[i1:i2] that stands once in ``a``, is not empty,
    and does not end in a blank line (blank lines end entries in a slip file) -- without a
    ``def`` line among its context where it can: a signature is the contract, and a change
    that stands on one must be rewritten when the contract changes."""
    for avoid_defs in (True, False):
        for size in range(0, len(a) + 1):
            for before in range(0, size + 1):
                after = size - before
                s, e = i1 - before, i2 + after
                if s < 0 or e > len(a) or e == s:
                    continue
                if a[e - 1].strip() == "" and e > i2:
                    continue
                if avoid_defs and any(_DEF.match(x) for x in a[s:i1] + a[i2:e]):
                    continue
                if len(_find(a, a[s:e])) == 1:
                    return s, e
    raise SlipError("no unique context: the base repeats itself entirely")


def write(path: Path, entries: list, intro: str) -> None:
    """A slip file: ``intro`` (comment lines) and the entries, one blank line apart."""
    head = "\n".join(f"# {line}".rstrip() for line in intro.strip().split("\n"))
    Path(path).write_text(head + "\n\n" + "\n".join(e.text() for e in entries), encoding="utf-8")


__all__ = ["Entry", "Change", "SlipError", "DEFAULT_BASE", "SOLUTION", "parse", "read", "apply", "expand",
           "base_path", "materialise",
           "make_entry", "write", "code_of", "docstring_of", "problem_folder"]
