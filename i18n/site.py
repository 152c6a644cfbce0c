"""The browser site's own text in Chinese: one gettext catalogue, i18n/zh_CN/site.po.

    msgid    the English string exactly as the site's code writes it, marked there with
             ``_("...")`` (a translator the page's code is given) or ``N_("...")`` (a
             module-level constant, translated where it is used); plus the course's title,
             README.md's first heading
    msgstr   its Chinese; ``{name}`` placeholders and HTML tags are kept (``problems`` checks)

The English lives only in the code: ``update`` extracts the marked strings from SOURCES with
Babel's Python extractor and merges them into the catalogue with polib. A string that is
new becomes an untranslated entry; a string whose English changed is a new msgid, so its
entry starts from the closest old translation, marked fuzzy, with the old English kept as
the previous msgid (what gettext's msgmerge does); a string the code no longer has becomes
obsolete (``#~``). ``problems`` lists everything that keeps the catalogue from being complete.

The build reads it with polib: ``translator("zh-CN")`` maps an English string to its
translation, or to itself where the catalogue has none that is usable (missing, fuzzy).
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
LOCALE = "zh_CN"
CATALOG = ROOT / "i18n" / LOCALE / "site.po"
SOURCES = ("web/landing.py", "web/build.py")   # the files whose _() / N_() strings the site shows
README = ROOT / "README.md"
FUZZY = "fuzzy"
KEYWORDS = {"_": None, "N_": None}               # Babel: the marker functions, one string argument


def N_(message: str) -> str:
    """Marks a module-level string for the catalogue; translated where it is used."""
    return message


def course_title(readme: Path = README) -> str:
    """The course's title: README.md's first heading."""
    m = re.search(r"^#\s+(.*\S)", readme.read_text(encoding="utf-8"), re.M)
    return m.group(1) if m else "The MLA course"


# --------------------------------------------------------------------------- the English

def messages(root: Path = ROOT) -> dict[str, list[str]]:
    """{English string: ["file:line", ...]} of every string the site translates, in the
    order the sources hold them."""
    from babel.messages.extract import extract_from_file

    found: dict[str, list[str]] = {}
    for rel in SOURCES:
        for lineno, message, _comments, _context in extract_from_file("python", str(root / rel),
                                                                       keywords=KEYWORDS):
            if isinstance(message, str) and message:
                found.setdefault(message, []).append(f"{rel}:{lineno}")
    found.setdefault(course_title(root / "README.md"), []).append("README.md:1")
    return found


# --------------------------------------------------------------------------- the catalogue

HEADER = ("The browser site's own text in Chinese (landing page, book pages, the lab's note).\n"
          "msgid = the English string in web/*.py; updated by `python -m i18n update site`; "
          "see i18n/site.py.")


def new_catalog(header: str = HEADER, project: str = "mla-course site"):
    """An empty Chinese catalogue of the course's (the site's, or the judge's: i18n/judge.py)."""
    import polib
    po = polib.POFile(wrapwidth=0)
    po.header = header
    po.metadata = {"Project-Id-Version": project, "Language": LOCALE, "MIME-Version": "1.0",
                   "Content-Type": "text/plain; charset=utf-8", "Content-Transfer-Encoding": "8bit",
                   "Plural-Forms": "nplurals=1; plural=0;"}
    return po


def load(path: Path = CATALOG, empty=new_catalog):
    """The catalogue at ``path``, or ``empty()`` where there is none yet."""
    import polib
    return polib.pofile(str(path), wrapwidth=0) if path.is_file() else empty()


def update(path: Path = CATALOG, root: Path = ROOT) -> dict[str, int]:
    """Bring the catalogue in step with the code's strings. Returns counts."""
    import polib

    old = load(path)
    live = {e.msgid: e for e in old if not e.obsolete}
    gone = {e.msgid: e for e in old if e.obsolete and e.msgstr}
    new = new_catalog()
    counts = {"same": 0, "new": 0, "fuzzy": 0, "obsolete": 0}
    found = messages(root)
    carried = set()   # old entries whose translation a fuzzy entry took over: not kept as obsolete
    for msgid, where in found.items():
        # where the string is, by file (line numbers would change the catalogue at every edit)
        entry = polib.POEntry(msgid=msgid, msgstr="", occurrences=[(f, "") for f in dict.fromkeys(
            w.rsplit(":", 1)[0] for w in where)])
        was = live.get(msgid)
        if was is not None:
            entry.msgstr, entry.flags, entry.previous_msgid = was.msgstr, list(was.flags), was.previous_msgid
            counts["same"] += 1
        else:   # a new or changed string: start from the closest old translation, if any
            candidates = {e.msgid: e for e in (*live.values(), *gone.values())
                          if e.msgid not in found and e.msgstr}
            close = difflib.get_close_matches(msgid, list(candidates), n=1, cutoff=0.6)
            if close:
                was = candidates[close[0]]
                carried.add(was.msgid)
                entry.msgstr, entry.flags = was.msgstr, [FUZZY]
                entry.previous_msgid = was.previous_msgid if FUZZY in was.flags and was.previous_msgid else was.msgid
                counts["fuzzy"] += 1
            else:
                counts["new"] += 1
        new.append(entry)
    for msgid, was in {**gone, **live}.items():
        if msgid not in found and msgid not in carried and was.msgstr:
            was.obsolete = True          # kept at the end of the file, marked #~
            was.occurrences = []
            new.append(was)
            counts["obsolete"] += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    new.wrapwidth = 0
    new.save(str(path))
    return counts


_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)")
_LANG_SPAN = re.compile(r'<span lang="[A-Za-z-]+">|</span>')


def same_markup(english: str, chinese: str) -> list[str]:
    """What a translation must keep: the same {placeholders} and the same HTML tags, by name.
    It may add what marks a language: a lang attribute (<i lang="en">), a <span lang="en">."""
    english, chinese = _LANG_SPAN.sub("", english), _LANG_SPAN.sub("", chinese)
    out = []
    for name, pattern in (("placeholders", _PLACEHOLDER), ("HTML tags", _TAG)):
        a, b = sorted(pattern.findall(english)), sorted(pattern.findall(chinese))
        if a != b:
            out.append(f"{name} differ: English {a}, Chinese {b}")
    return out


def problems(path: Path = CATALOG, root: Path = ROOT) -> list[str]:
    """Everything that keeps the site's catalogue from being complete and in step."""
    if not path.is_file():
        return [f"no catalogue {path.relative_to(root) if path.is_relative_to(root) else path} "
                "(run `python -m i18n update site`)"]
    cat = load(path)
    entries = {e.msgid: e for e in cat if not e.obsolete}
    found = messages(root)
    out = []
    for msgid, where in found.items():
        e = entries.get(msgid)
        short = msgid if len(msgid) <= 60 else msgid[:57] + "..."
        if e is None:
            out.append(f"site {where[0]}: {short!r} is not in the catalogue (run `python -m i18n update site`)")
        elif not e.msgstr:
            out.append(f"site {where[0]}: {short!r} not translated")
        elif FUZZY in e.flags:
            out.append(f"site {where[0]}: {short!r} fuzzy: the English changed since it was translated")
        else:
            out.extend(f"site {where[0]}: {short!r} {w}" for w in same_markup(msgid, e.msgstr))
    out.extend(f"site: {m[:60]!r} is in the catalogue but no longer in the code (run `python -m i18n update site`)"
               for m in entries if m not in found)
    return out


# --------------------------------------------------------------------------- the build

Translator = Callable[[str], str]


def translator(lang: str, path: Path = CATALOG) -> Translator:
    """English -> the site's language. "en" is the identity; "zh-CN" reads the catalogue, and
    a string it has no usable translation for (missing, fuzzy) stays English."""
    if lang == "en":
        return lambda s: s
    if lang != "zh-CN":
        raise ValueError(f"no catalogue for language {lang!r} (the site has 'en' and 'zh-CN')")
    table = {e.msgid: e.msgstr for e in load(path) if e.msgstr and not e.obsolete and FUZZY not in e.flags}
    return lambda s: table.get(s, s)


__all__ = ["N_", "messages", "load", "update", "problems", "same_markup", "translator", "course_title",
           "CATALOG", "SOURCES"]
