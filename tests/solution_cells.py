"""What the book and the decks may show of an exercise's solution: used by
tests/test_site.py (the book: only inside a closed <details>) and
tests/test_classroom_slides.py (the decks: nothing).

A solution cell is a code cell tagged ``solution`` (classroom.execute.SOLUTION_TAG). Its
*telltales* are the lines of its source and of its printed outputs that no other cell of the
chapter holds, whole or in part (its "# Solution to exercise N.k" line, the "Exercise N.k: correct" it prints,
its worked arithmetic): finding one of them on a page means the page shows the solution.
"""
from __future__ import annotations

import html.parser

from classroom.execute import SOLUTION_TAG

MIN_TELLTALE = 12   # characters: shorter lines ("print(x)", "ok") are too common to mean anything


def is_solution(cell) -> bool:
    return cell.get("cell_type") == "code" and SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def _output_text(output) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    return output.get("data", {}).get("text/plain", "")


def _lines(cell) -> set[str]:
    texts = [cell.get("source", "")] + [_output_text(o) for o in cell.get("outputs", [])]
    return {ln.strip() for t in texts for ln in t.splitlines() if ln.strip()}


def telltales(nb) -> dict[str, dict[str, set[str]]]:
    """{solution cell id: {"source": lines, "output": lines}} of the lines that only that
    solution cell has, MIN_TELLTALE characters or longer. Raises when a solution cell has
    no source telltale (the check could not see it) or when the chapter has no solution."""
    cells = nb["cells"]
    found = {}
    for i, cell in enumerate(cells):
        if not is_solution(cell):
            continue
        elsewhere = "\n".join(ln for j, c in enumerate(cells) if j != i for ln in _lines(c))
        own = {ln for ln in _lines(cell) if len(ln) >= MIN_TELLTALE and ln not in elsewhere}
        source = {ln.strip() for ln in cell["source"].splitlines()}
        found[cell.get("id")] = {"source": own & source, "output": own - source}
        if not found[cell.get("id")]["source"]:
            raise AssertionError(f"solution cell {cell.get('id')} has no line of its own to look for")
    if not found:
        raise AssertionError("the chapter has no cell tagged solution")
    return found


class PageText(html.parser.HTMLParser):
    """A page's text, split into what a reader sees at once and what is inside a closed
    <details> (its <summary> excepted: that is the visible label); scripts and styles are
    neither. ``closed_ids``: the id attributes of elements inside a closed <details>."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.visible, self.hidden, self.ids, self.closed_ids = [], [], set(), set()
        self._stack = []            # (tag, inside a closed <details>, inside its <summary>)
        self.feed(text)
        self.close()
        self.visible_text, self.hidden_text = "".join(self.visible), "".join(self.hidden)

    def _closed(self) -> bool:
        return bool(self._stack) and self._stack[-1][1] and not self._stack[-1][2]

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        closed, in_summary = (self._stack[-1][1], self._stack[-1][2]) if self._stack else (False, False)
        if tag == "details" and "open" not in attrs:
            closed, in_summary = True, False
        elif tag == "summary" and self._stack and self._stack[-1][0] == "details":
            in_summary = True
        if attrs.get("id"):
            self.ids.add(attrs["id"])
            if closed and not in_summary:
                self.closed_ids.add(attrs["id"])
        if tag not in _Void:
            self._stack.append((tag, closed, in_summary))

    def handle_endtag(self, tag):
        if any(t == tag for t, _, _ in self._stack):
            while self._stack.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if self._stack and self._stack[-1][0] in ("script", "style"):
            return
        (self.hidden if self._closed() else self.visible).append(data)


_Void = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


def shown_in_book(nb, page: str) -> list[str]:
    """What of ``nb``'s solutions its book page shows outside a closed <details>, or fails
    to hold at all (the test would be blind then): [] when every solution is there, closed."""
    text = PageText(page)
    bad = []
    for cell_id, lines in telltales(nb).items():
        if f"cell-id={cell_id}" not in text.closed_ids:
            bad.append(f"cell {cell_id} is not inside a closed <details>")
        for kind, found in lines.items():
            for ln in sorted(found):
                if ln in text.visible_text:
                    bad.append(f"cell {cell_id}: its {kind} line {ln!r} is visible")
                elif ln not in text.hidden_text:
                    bad.append(f"cell {cell_id}: its {kind} line {ln!r} is not on the page at all")
    return bad


def shown_in_deck(nb, deck: str) -> list[str]:
    """What of ``nb``'s solutions the deck holds anywhere (visible or not): [] when nothing."""
    text = PageText(deck)
    everything = text.visible_text + text.hidden_text
    bad = [f"cell {cell_id}: its {kind} line {ln!r} is in the deck"
           for cell_id, lines in telltales(nb).items() for kind, found in lines.items()
           for ln in sorted(found) if ln in everything]
    bad += [f"cell {cell_id}: its anchor is in the deck" for cell_id in telltales(nb)
            if f"cell-id={cell_id}" in text.ids]
    return bad
