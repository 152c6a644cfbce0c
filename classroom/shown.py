"""Text a student chose, made inert for the place it is shown: one function per medium.

Whatever a student controls -- folder, zip and file names, a notebook's code quoted in a
refusal, what an attempt printed or raised, case details in a verdict, a claimed
submission time -- ends up in the teacher's terminal, in summary.md and matching.md, in
the CSVs, in results/<id>.json and in Gradescope's results.json. Every writer passes such
a string through the function of its medium, and through nothing else:

  terminal(text)   one line: every control character (C0 such as ESC, which starts ANSI
                   sequences, NUL and CR; DEL; C1 such as CSI), every format character
                   (the bidi controls U+202A..U+202E and U+2066..U+2069, U+200E/F, U+061C,
                   zero-width characters) and every separator but the plain space (a line
                   or paragraph separator) is written as its escape (\\x1b, \\u202e), and a
                   backslash is doubled so that an escape cannot be forged
  markdown(text)   the same escaped text as one inline code span, fenced by more backticks
                   than it holds: in CommonMark and GitHub's Markdown nothing inside a code
                   span is markup (no HTML such as <img>, no [link](...) or ![image](...),
                   no emphasis, no autolink), and it cannot span lines
  csv_cell(text)   the escaped text, with an apostrophe first where a spreadsheet would
                   run it as a formula (=, +, -, @ first, spaces before them included)
  json_text(text)  for multi-line feedback in JSON (results.json, summary.json): the escapes
                   above except that line breaks and tabs stay; lone surrogates are escaped
                   too, so json.dumps writes valid JSON that decodes to plain text
  cut(text, n)     at most about n characters, ending in "… cut (N more characters)"
                   when it was longer (the readers of records cap every field with it)

A writer never builds one of these media from student text any other way; tests/
test_classroom_hostile.py feeds ANSI escapes, <img src=...>, [x](javascript:...), U+202E,
=HYPERLINK(...), NUL and CR through every report and reads the files back.
"""
from __future__ import annotations

import re

CUT = "… cut ({n} more characters)"
FORMULA_START = ("=", "+", "-", "@")


def _escape(text: str, keep: str = "", double_backslash: bool = True) -> str:
    """``text`` with every character that is not printable (str.isprintable: categories
    C* and Z* but the space) written as a Python escape, except those in ``keep``."""
    text = str(text)
    if text.isprintable() and ("\\" not in text or not double_backslash):
        return text
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\" if double_backslash else ch)
        elif ch.isprintable() or ch in keep:
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return "".join(out)


def plain(text) -> str:
    """One line of inert text: the escaping every medium starts from (see the top)."""
    return _escape(text)


def terminal(text) -> str:
    """For the teacher's terminal (and a log line): one line, no escape sequence."""
    return _escape(text)


def markdown(text) -> str:
    """An inline code span showing ``text`` escaped: nothing of it is Markdown or HTML."""
    body = _escape(text)
    if not body:
        return "` `"
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    # a body that starts or ends with a backtick, or both starts and ends with a space, gets
    # one space on each side: CommonMark strips exactly one from each end
    pad = " " if body[0] == "`" or body[-1] == "`" or (body[0] == " " and body[-1] == " ") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def csv_cell(text) -> str:
    """A spreadsheet cell that is shown as text, never run as a formula."""
    body = _escape(text)
    return "'" + body if body.lstrip(" ").startswith(FORMULA_START) else body


def json_text(text) -> str:
    """Multi-line text for a JSON value: controls and bidi escaped, line breaks kept."""
    return _escape(text, keep="\n\t", double_backslash=False)


def json_value(obj):
    """A copy of plain data with json_text applied to every string, keys included."""
    if isinstance(obj, str):
        return json_text(obj)
    if isinstance(obj, dict):
        return {json_text(k) if isinstance(k, str) else k: json_value(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_value(v) for v in obj]
    return obj


def cut(text, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and the marker."""
    text = str(text)
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(CUT) - 8)
    return text[:keep] + CUT.format(n=f"{len(text) - keep:,}")


__all__ = ["plain", "terminal", "markdown", "csv_cell", "json_text", "json_value", "cut", "CUT"]
