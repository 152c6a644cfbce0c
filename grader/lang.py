"""The judge's language: English, or Simplified Chinese (zh_CN).

Which one, in this order (the first that names a language we have, or "en"):
  1. ``--lang zh|en`` on the command line (also ``%judge --lang zh`` in a notebook or the
     browser, remembered for the rest of that session: ``use``);
  2. the course setting file practice/.judge_lang: one line, ``zh_CN`` or ``en`` (a
     Chinese student release writes it; the browser's practice folder holds its own);
  3. the environment, in gettext's order: LANGUAGE (a colon-separated list), LC_ALL,
     LC_MESSAGES, LANG -- the first variable that is set decides ("C"/"POSIX" is English);
  4. English.
A language we do not have (``--lang fr``, a file saying "de") falls back to English with
a one-line note (``note``); a locale in the environment we do not have is plain English.

The words: Python's gettext with one domain, "judge". Code marks its sentences with
``_("...")`` (``N_`` for module-level constants, translated where they are shown); the
problems' data -- statements, titles, hints, named-mistake messages -- are looked up with a
context (``pgettext("p04 statement", text)``: grader/texts.py). The English is the msgid, so a string without a usable
translation stays English. The catalogue is i18n/zh_CN/judge.po (``python -m i18n update
judge``), compiled into grader/locale/zh_CN/LC_MESSAGES/judge.mo, which is committed
(a test keeps it in step) so that the judge needs nothing beyond the standard library to
speak Chinese -- on a light install, in a student release, in the browser.

The language changes words only: the sandboxed child never sees it (what the child
writes -- a traceback, a changed-input report -- stays as Python wrote it), the verdicts,
numbers, seeds and the JSON's keys and status values are the same in both languages.
"""
from __future__ import annotations

import gettext
import os
import sys
from pathlib import Path

DOMAIN = "judge"
LOCALES = Path(__file__).resolve().parent / "locale"   # <lang>/LC_MESSAGES/judge.mo
SETTING_FILE = ".judge_lang"                           # in the practice folder
PRACTICE = Path(__file__).resolve().parent.parent / "practice"   # the default one (= runner.PRACTICE)
LANGUAGES = ("en", "zh_CN")
ENV_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")   # gettext's order

_chosen: str | None = None        # set by ``use`` (--lang): lasts for this process / session
_active: tuple[str, gettext.NullTranslations] | None = None
_notes: list[str] = []            # what the last ``choose`` fell back from, for ``note``
_by_option: str | None = None     # the language the last ``use`` took from its --lang, if it did
_without_option: str = "en"       # what that ``use`` would have chosen without it (file, environment)


def N_(message: str) -> str:
    """Marks a module-level string for the catalogue; translate it where it is shown."""
    return message


class Said(str):
    """An English sentence that remembers how it was made -- a template of the catalogue and
    its values -- so that it can be shown in another language later (``say``). Everywhere
    else it *is* the English string: in JSON, in the gradebook, in comparisons. A verdict
    is composed once, in English, by the judge's parent process; only its display changes
    with the language. Values are pre-formatted (numbers the same in every language)."""

    def __new__(cls, template: str, **values):
        self = super().__new__(cls, template.format(**values))
        self.template, self.values = template, values
        return self

    def __reduce__(self):   # pickles (the teacher's worker processes) as itself
        return (_said, (str(self.template), dict(self.values)))


def _said(template, values):
    return Said(template, **values)


def said(template: str, **values) -> Said:
    """``said("{fn} returned None", fn=name)``: marked for the catalogue like ``_``."""
    return Said(template, **values)


def said_lines(lines) -> Said:
    """Several sentences, one per line, each shown in the current language."""
    lines = list(lines)
    return Said("\n".join("{l%d}" % k for k in range(len(lines))), **{f"l{k}": v for k, v in enumerate(lines)})


def say(text) -> str:
    """``text`` in the current language: a Said is translated (its Said values too);
    anything else is shown as it is."""
    if isinstance(text, Said):
        return _(text.template).format(**{k: say(v) for k, v in text.values.items()})
    return text if text is None else str(text)


def normalize(code: str | None) -> str | None:
    """'zh', 'zh_CN', 'zh-CN', 'zh_CN.UTF-8', 'zh-Hans', 'cn' -> 'zh_CN'; 'en*', 'C',
    'POSIX' -> 'en'; anything else (or empty) -> None."""
    if not code:
        return None
    base = code.strip().split(".")[0].split("@")[0].replace("-", "_").lower()
    if base in ("c", "posix") or base == "en" or base.startswith("en_"):
        return "en"
    if base in ("zh", "cn", "zh_cn", "zh_hans", "zh_sg", "zh_hans_cn", "chinese"):
        return "zh_CN"
    return None


def setting_file(folder=None) -> Path:
    """.judge_lang in the practice folder: the one the caller knows (hints.folder(), the
    browser's), else the judge's (grader.runner.PRACTICE where it is loaded: a test run
    points it at a copy; not imported here, runner's users import this module)."""
    runner = sys.modules.get("grader.runner")
    return Path(folder or getattr(runner, "PRACTICE", PRACTICE)) / SETTING_FILE


def _from_file(folder=None) -> tuple[str | None, str | None]:
    """(language, raw value) from the setting file; (None, None) when there is none."""
    try:
        lines = setting_file(folder).read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None, None
    raw = lines[0] if lines else ""
    return normalize(raw), raw


def _from_environment(environ=None) -> str | None:
    environ = os.environ if environ is None else environ
    for var in ENV_VARS:
        value = environ.get(var)
        if value:   # the first variable that is set decides, as in gettext
            for part in value.split(":") if var == "LANGUAGE" else [value]:
                lang = normalize(part)
                if lang:
                    return lang
            return None if var == "LANGUAGE" else "en"
    return None


def choose(option: str | None = None, environ=None, folder=None) -> str:
    """The language to speak: --lang, else the session's, else the setting file, else the
    environment, else English. Unknown names fall back to English; ``note`` says so."""
    _notes.clear()
    if option:
        lang = normalize(option)
        if lang:
            return lang
        _notes.append(f"--lang {option}")
    if _chosen:
        return _chosen
    lang, raw = _from_file(folder)
    if lang:
        return lang
    if raw:
        _notes.append(f"{SETTING_FILE} says {raw!r}")
    return _from_environment(environ) or "en"


def note() -> str | None:
    """One line when the last ``choose`` met a language it does not have (else None)."""
    if not _notes:
        return None
    return (f"note: no judge messages in {' / '.join(_notes)}; speaking English "
            f"(languages: en, zh_CN).")


def translations(lang: str) -> gettext.NullTranslations:
    """The catalogue for ``lang`` ('en': none, every string stays English)."""
    if lang == "en":
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, localedir=str(LOCALES), languages=[lang], fallback=True)


def use(lang: str | None, remember: bool = False, folder=None) -> str:
    """Speak ``lang`` from now on (None: decide by the session, the setting file in
    ``folder`` and the environment). With ``remember`` (``--lang``) it also holds for later
    calls in this process without one (a notebook's session)."""
    global _active, _chosen, _by_option, _without_option
    chosen = choose(lang, folder=folder)
    if remember and lang and normalize(lang):
        _chosen = chosen
    _by_option = chosen if lang and normalize(lang) else None
    _without_option = _from_file(folder)[0] or _from_environment() or "en"
    _active = (chosen, translations(chosen))
    return chosen


def option_to_keep() -> str:
    """What a command the judge suggests must add to go on speaking this language in a new
    run: " --lang zh" (or " --lang en") when --lang chose the language now spoken and, without
    it, the setting file or the environment would choose another; "" otherwise."""
    if _by_option is None or _active is None or _active[0] != _by_option or _by_option == _without_option:
        return ""
    return " --lang " + ("zh" if _by_option == "zh_CN" else "en")


class speaking:
    """``with lang.speaking("en"): ...``: the words of that language inside the block, the
    language in force before it afterwards (the teacher's gradebook is always English, so
    that it is the same bytes on every machine and its cache serves every locale)."""

    def __init__(self, code: str):
        self.code = code

    def __enter__(self):
        global _active
        self._was = _active
        lang = normalize(self.code) or "en"
        _active = (lang, translations(lang))
        return lang

    def __exit__(self, *exc):
        global _active
        _active = self._was
        return False


def forget() -> None:
    """Back to deciding by file and environment (tests)."""
    global _active, _chosen, _by_option
    _active, _chosen, _by_option = None, None, None


def current() -> str:
    return _catalogue()[0]


def _catalogue() -> tuple[str, gettext.NullTranslations]:
    if _active is None:
        use(None)
    return _active


def _(message: str) -> str:
    """The current language's words for an English string of the judge's code."""
    return _catalogue()[1].gettext(message)


def pgettext(context: str, message: str) -> str:
    return _catalogue()[1].pgettext(context, message)


__all__ = ["N_", "_", "said", "said_lines", "say", "Said", "pgettext", "choose", "use", "speaking", "note", "current", "forget", "normalize",
           "option_to_keep",
           "setting_file",
           "SETTING_FILE", "LANGUAGES", "DOMAIN", "LOCALES"]
