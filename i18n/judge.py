"""The judge in Chinese: one gettext catalogue, i18n/zh_CN/judge.po, domain "judge".

Two kinds of entries, both extracted, never typed in by hand:
  code    the sentences of grader/*.py marked ``_("...")`` / ``N_("...")`` / ``said("...")``
          (Babel's Python extractor), no msgctxt; ``{name}`` placeholders (str.format) and argparse's
          ``%(name)s`` ones are kept by the translation (``problems`` checks);
  data    each problem's title, summary, statement, hints and named-mistake messages, read
          from the problems' folders themselves (grader/problems/pNN_slug/spec.py, the
          entries of its mistakes.diff) with a msgctxt saying what they are: "p04 title",
          "p04 summary", "p04 statement", "p04 hint 2", "p04 mistake <name>". Their translations keep every number, `code` name, $formula$
          and link of the English (i18n.notebooks.same_facts).

``update`` merges what the code and the specs say now into the catalogue (polib): an entry
whose English changed keeps its old translation marked fuzzy, with the old English as the
previous msgid, until someone re-translates it; an entry nothing says any more becomes
obsolete. ``compile`` writes grader/locale/zh_CN/LC_MESSAGES/judge.mo (fuzzy and
untranslated entries left out), which the judge reads with the standard library's gettext
and which is committed, so that a learner needs no build step and no polib; a test keeps it
equal to the .po.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from . import site

ROOT = Path(__file__).resolve().parent.parent
LOCALE = "zh_CN"
CATALOG = ROOT / "i18n" / LOCALE / "judge.po"
MO = ROOT / "grader" / "locale" / LOCALE / "LC_MESSAGES" / "judge.mo"
FUZZY = "fuzzy"
KEYWORDS = {"_": None, "N_": None, "said": None}


def code_sources(root: Path = ROOT) -> list[Path]:
    """The judge's code whose marked sentences are catalogued: grader/*.py and the specs'
    checkers (``said`` in grader/problems/pNN_slug/spec.py; the specs' statements, hints
    and mistakes are data, below)."""
    return sorted([*(root / "grader").glob("*.py"), *(root / "grader" / "problems").glob("p[0-9]*/spec.py")])


# --------------------------------------------------------------------------- the English

def code_messages(root: Path = ROOT) -> dict[str, list[str]]:
    """{English: [file, ...]} of every marked sentence of the judge's code."""
    import contextlib
    import io

    from babel.messages.extract import extract_from_file
    found: dict[str, list[str]] = {}
    for path in code_sources(root):
        rel = str(path.relative_to(root))
        with contextlib.redirect_stderr(io.StringIO()):   # Babel notes f-strings among the values
            extracted = list(extract_from_file("python", str(path), keywords=KEYWORDS))
        for _lineno, message, _comments, _context in extracted:
            if isinstance(message, str) and message:
                where = found.setdefault(message, [])
                if rel not in where:
                    where.append(rel)
    return found


def data_messages() -> dict[tuple[str, str], str]:
    """{(msgctxt, English): the file it comes from} for every problem's title, summary,
    statement, hints and named mistakes, from the specs as the judge loads them."""
    from grader import runner, texts
    errors: list = []
    problems = runner.discover(errors)
    if errors:
        raise RuntimeError(f"problem specs failed to load: {errors}")
    found: dict[tuple[str, str], str] = {}
    for p in problems:
        k = texts.key(p)
        spec = f"grader/problems/{p.stem}/spec.py"
        found[(f"{k} title", p.title)] = spec
        found[(f"{k} summary", p.summary)] = spec
        found[(f"{k} statement", texts.statement_parts(p)[0])] = spec
        for n, h in enumerate(p.hints, 1):
            found[(f"{k} hint {n}", h)] = spec
        for m in p.mistakes:
            found[(f"{k} mistake {m.name}", m.message)] = f"grader/problems/{m.where}" if m.where else spec
    return found


def messages(root: Path = ROOT) -> dict[tuple[str | None, str], list[str]]:
    """{(msgctxt or None, English): [where, ...]}: everything the judge translates."""
    out: dict[tuple[str | None, str], list[str]] = {(None, m): w for m, w in code_messages(root).items()}
    out.update({k: [w] for k, w in data_messages().items()})
    return out


# --------------------------------------------------------------------------- the catalogue

HEADER = ("The judge's words in Chinese: its sentences (grader/*.py and the checkers in grader/problems/,\n"
          "marked _(), N_() or said()) and each problem's title, summary, statement, hints and named mistakes\n"
          "(msgctxt \"pNN ...\", read from the specs).\n"
          "Updated by `python -m i18n update judge`; compiled into grader/locale/ by the same; "
          "see i18n/judge.py.")


def _new_catalog():
    return site.new_catalog(HEADER, "mla-course judge")


def load(path: Path = CATALOG):
    return site.load(path, empty=_new_catalog)


def entries(cat) -> dict[tuple[str | None, str], object]:
    return {(e.msgctxt, e.msgid): e for e in cat if not e.obsolete}


def update(path: Path = CATALOG, root: Path = ROOT, mo: Path | None = None) -> dict[str, int]:
    """Bring the catalogue in step with the code and the specs, then compile it (into
    ``mo``, default MO). Counts."""
    import polib
    old = load(path)
    live = entries(old)
    gone = {(e.msgctxt, e.msgid): e for e in old if e.obsolete and e.msgstr}
    found = messages(root)
    new = _new_catalog()
    counts = {"same": 0, "new": 0, "fuzzy": 0, "obsolete": 0}
    carried = set()
    by_msgid = {}      # an unchanged English under a new context (a hint moved): same words
    for (ctx, msgid), e in {**gone, **live}.items():
        if e.msgstr and FUZZY not in e.flags:
            by_msgid.setdefault(msgid, e)
    for (ctx, msgid), where in found.items():
        entry = polib.POEntry(msgctxt=ctx, msgid=msgid, msgstr="", occurrences=[(w, "") for w in where])
        was = live.get((ctx, msgid))
        if was is not None:
            entry.msgstr, entry.flags, entry.previous_msgid = was.msgstr, list(was.flags), was.previous_msgid
            counts["same"] += 1
        elif msgid in by_msgid:
            entry.msgstr = by_msgid[msgid].msgstr
            carried.add((by_msgid[msgid].msgctxt, msgid))
            counts["same"] += 1
        else:   # new or changed English: the same context's old translation (or the closest), fuzzy
            candidates = {k: e for k, e in {**gone, **live}.items() if k not in found and e.msgstr}
            same_ctx = [k for k in candidates if ctx is not None and k[0] == ctx]
            if same_ctx:
                close = same_ctx[:1]
            else:
                texts = {k[1]: k for k in candidates}
                close = [texts[t] for t in difflib.get_close_matches(msgid, list(texts), n=1, cutoff=0.6)]
            if close:
                was = candidates[close[0]]
                carried.add(close[0])
                entry.msgstr, entry.flags = was.msgstr, [FUZZY]
                entry.previous_msgid = (was.previous_msgid if FUZZY in was.flags and was.previous_msgid
                                        else was.msgid)
                counts["fuzzy"] += 1
            else:
                counts["new"] += 1
        new.append(entry)
    for k, was in {**gone, **live}.items():
        if k not in found and k not in carried and was.msgstr:
            was.obsolete, was.occurrences = True, []
            new.append(was)
            counts["obsolete"] += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    new.wrapwidth = 0
    new.save(str(path))
    compile_mo(path, mo)
    return counts


def compile_mo(path: Path = CATALOG, mo: Path | None = None) -> Path:
    """grader/locale/zh_CN/LC_MESSAGES/judge.mo (or ``mo``) from the .po: translated, not
    fuzzy entries."""
    mo = mo or MO
    cat = load(path)
    usable = _new_catalog()
    for e in cat:
        if e.msgstr and not e.obsolete and FUZZY not in e.flags:
            usable.append(e)
    mo.parent.mkdir(parents=True, exist_ok=True)
    usable.save_as_mofile(str(mo))
    return mo


_PERCENT = re.compile(r"%\([A-Za-z_]+\)[sdr]|%[sdr]")


def markup_differs(english: str, chinese: str, data: bool) -> list[str]:
    """What a translation must keep: the site's check ({placeholders}, HTML tags), argparse's
    %-placeholders, and for the problems' texts (data) their numbers, formulas, code names
    and links; a code sentence's numbers too."""
    from . import notebooks
    out = site.same_markup(english, chinese)
    a, b = sorted(_PERCENT.findall(english)), sorted(_PERCENT.findall(chinese))
    if a != b:
        out.append(f"%-placeholders differ: English {a}, Chinese {b}")
    if english.endswith("\n") != chinese.endswith("\n"):
        out.append("a final newline in one and not the other")
    lead = lambda t: t[: len(t) - len(t.lstrip(" "))]  # noqa: E731 -- an indented line stays indented
    if (len(lead(english)) > 1 or len(lead(chinese)) > 1) and lead(english) != lead(chinese):
        out.append(f"leading spaces differ: English {len(lead(english))}, Chinese {len(lead(chinese))}")
    out.extend(notebooks.same_facts(english, chinese))
    return out


def problems(path: Path | None = None, root: Path | None = None) -> list[str]:
    """Everything that keeps the judge's catalogue from being complete, in step and compiled
    (default: the course's catalogue, read where CATALOG and ROOT point when called)."""
    path, root = path or CATALOG, root or ROOT
    if not path.is_file():
        return ["judge: no catalogue i18n/zh_CN/judge.po (run `python -m i18n update judge`)"]
    have = entries(load(path))
    found = messages(root)
    out = []
    for (ctx, msgid), where in found.items():
        e = have.get((ctx, msgid))
        short = (f"[{ctx}] " if ctx else "") + (msgid if len(msgid) <= 50 else msgid[:47] + "...")
        if e is None:
            out.append(f"judge {where[0]}: {short!r} is not in the catalogue (run `python -m i18n update judge`)")
        elif not e.msgstr:
            out.append(f"judge {where[0]}: {short!r} not translated")
        elif FUZZY in e.flags:
            out.append(f"judge {where[0]}: {short!r} fuzzy: the English changed since it was translated")
        else:
            out.extend(f"judge {where[0]}: {short!r} {w}" for w in markup_differs(msgid, e.msgstr, ctx is not None))
    out.extend(f"judge: [{k[0]}] {k[1][:50]!r} is in the catalogue but no longer in the judge "
               "(run `python -m i18n update judge`)" for k in have if k not in found)
    if not out and mo_stale(path, MO):
        out.append("judge: grader/locale/zh_CN/LC_MESSAGES/judge.mo is older than the .po "
                   "(run `python -m i18n update judge`)")
    return out


def mo_table(mo: Path | None = None) -> dict:
    """The compiled catalogue as the judge reads it: {msgid or 'ctx\\x04msgid': msgstr}."""
    import gettext
    with open(mo or MO, "rb") as f:
        t = gettext.GNUTranslations(f)
    return {k: v for k, v in t._catalog.items() if k != ""}


def po_table(path: Path = CATALOG) -> dict:
    return {(f"{e.msgctxt}\x04{e.msgid}" if e.msgctxt else e.msgid): e.msgstr
            for e in load(path) if e.msgstr and not e.obsolete and FUZZY not in e.flags}


def mo_stale(path: Path = CATALOG, mo: Path | None = None) -> bool:
    mo = mo or MO
    return not mo.is_file() or mo_table(mo) != po_table(path)


__all__ = ["messages", "code_messages", "data_messages", "load", "update", "compile_mo", "problems",
           "markup_differs", "mo_table", "po_table", "mo_stale", "CATALOG", "MO"]
