"""Generated sections of a hand-written text (README.md, docs/teaching.md, a chapter's
markdown cell): the lines between ``<!-- BEGIN GENERATED: name -->`` and
``<!-- END GENERATED: name -->``, rewritten from the problem specs by
``python -m authoring regenerate``. A catalogue never holds them: its English is the text
with every section emptied (``empty``), and each language's edition gets its sections
written in its own words (authoring/tables.py, classroom/guide.py)."""
from __future__ import annotations

import re

PATTERN = re.compile(r"(<!-- BEGIN GENERATED: (\w+) -->\n).*?(<!-- END GENERATED: \2 -->)", re.S)


def begin(name: str) -> str:
    return f"<!-- BEGIN GENERATED: {name} -->"


def end(name: str) -> str:
    return f"<!-- END GENERATED: {name} -->"


def empty(text: str) -> str:
    """The text with every generated section emptied (its markers kept)."""
    return PATTERN.sub(r"\1\3", text)


def found(text: str) -> dict[str, str]:
    """{name: the whole section, markers included} of every generated section."""
    return {m.group(2): m.group(0) for m in PATTERN.finditer(text)}


def names(text: str) -> list[str]:
    return [m.group(2) for m in PATTERN.finditer(text)]


def block(name: str, body: str) -> str:
    """A whole section: its markers around ``body``."""
    return f"{begin(name)}\n{body}\n{end(name)}"


def put(text: str, name: str, body: str) -> str:
    """The text with section ``name`` holding ``body`` (ValueError when it has no such section)."""
    pat = re.compile(rf"{re.escape(begin(name))}\n.*?{re.escape(end(name))}", re.S)
    if not pat.search(text):
        raise ValueError(f"no generated section {name!r} (the markers {begin(name)} ... {end(name)})")
    return pat.sub(lambda _m: block(name, body), text, count=1)


# A row of README's map: | N | [title](notebooks/NN_slug.ipynb) | what it derives | practice |
# Its last cell, the chapter's problems, is generated too: a cell that lists data, not words.
MAP_ROW = re.compile(r"^(\| (\d+) \| \[[^\]]*\]\((?:\.\./)?notebooks/(?:zh/)?(\d\d)_[^)]*\.ipynb\) \|.*\|)"
                     r"([^|\n]*)\|[ \t]*$", re.M)


def map_cells(text: str, practice: dict[int, str]) -> str:
    """The map's rows with their last cell ``practice[chapter number]`` ("--" when absent)."""
    return MAP_ROW.sub(lambda m: f"{m.group(1)} {practice.get(int(m.group(3))) or '--'} |", text)


def map_cells_emptied(text: str) -> str:
    """The map's rows with an empty last cell: what a catalogue holds."""
    return MAP_ROW.sub(lambda m: f"{m.group(1)}  |", text)


def map_practice(text: str) -> dict[int, str]:
    """{chapter number: its row's last cell} of the map in ``text``."""
    return {int(m.group(3)): m.group(4).strip() for m in MAP_ROW.finditer(text)}


def fill(text: str, blocks: dict[str, str]) -> str:
    """The text with each section named in ``blocks`` replaced by that whole section."""
    return PATTERN.sub(lambda m: blocks.get(m.group(2), m.group(0)), text)


__all__ = ["PATTERN", "MAP_ROW", "begin", "end", "empty", "found", "names", "block", "put", "fill", "map_cells",
           "map_cells_emptied", "map_practice"]
