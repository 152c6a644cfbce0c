"""One word per concept in the Chinese edition, driven by docs/glossary.zh.md's table "One
word per concept": in every Chinese catalogue (i18n/zh_CN/**/*.po: the chapters, the judge,
the site, the documents) and every generated Chinese document (README.zh.md,
docs/teaching.zh.md, notebooks/zh/), a variant the glossary bans fails, naming the term to
use; a seed's alias appears only beside its term; absorption is introduced as 矩阵吸收.
Prose only: code, formulas and link targets are names, and 「verbatim quotations」 of the
Chinese sources keep their own words."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import polib
import pytest

from tests.test_i18n import GLOSSARY, prose

ROOT = Path(__file__).resolve().parent.parent
CATALOGUES = sorted((ROOT / "i18n" / "zh_CN").rglob("*.po"))
DOCUMENTS = [ROOT / "README.zh.md", ROOT / "docs" / "teaching.zh.md"]
CHAPTERS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))
SECTION = "## One word per concept"
NUMBER = r"\d[\d,]*(?:\.\d+)?"
QUOTE = re.compile(r"「[^」]*」")


@dataclass(frozen=True)
class Term:
    use: str                      # the term to use, as the table writes it
    banned: tuple[str, ...]       # variants, "#" for a number
    aliases: tuple[str, ...]      # the seeds' words for it: beside the term, never alone

    def pattern(self, variant: str) -> re.Pattern:
        """A variant as a regex: "#" a number, a space any (or no) space; "#×" is a
        multiple, not a product ("128 × 128K" and "64×64" are products)."""
        parts = [NUMBER if p == "#" else r"\s*" if p == " " else re.escape(p) for p in re.split(r"(#| )", variant)]
        tail = r"(?!\s*\d)" if variant.endswith("×") else ""
        return re.compile("".join(parts) + tail)


def terms(text: str | None = None) -> list[Term]:
    """The rows of the glossary's table "One word per concept"."""
    text = GLOSSARY.read_text(encoding="utf-8") if text is None else text
    if SECTION not in text:
        raise AssertionError(f"{GLOSSARY.name} has no section {SECTION!r}")
    table = text.split(SECTION, 1)[1]
    rows = re.findall(r"^\|([^\n]*)\|\s*$", table, flags=re.M)
    out = []
    for row in rows:
        cells = [c.strip() for c in row.split("|")]
        if len(cells) < 3 or cells[0] in ("用词", "") or set(cells[0]) <= set("-"):
            continue
        split = lambda c: tuple(v.strip() for v in c.split(" / ") if v.strip())  # noqa: E731
        out.append(Term(cells[0], split(cells[1]), split(cells[2])))
    return out


def checked_prose(text: str) -> str:
    """What the terms are checked in: prose, without 「verbatim quotations」."""
    return QUOTE.sub(" ", prose(text))


def misuses(text: str, table: list[Term]) -> list[str]:
    """Each banned variant (with the term to use) and each alias standing alone."""
    plain = checked_prose(text)
    out = []
    for t in table:
        for v in t.banned:
            for m in t.pattern(v).finditer(plain):
                around = plain[max(0, m.start() - 12): m.end() + 12].replace("\n", " ")
                out.append(f"{m.group(0)!r} -> {t.use!r} (…{around}…)")
        uses = [u.strip() for u in t.use.split(" / ")]
        for a in t.aliases:
            if a in plain and not any(u in plain for u in uses):
                out.append(f"the alias {a!r} alone -> {t.use!r} beside it")
    return out


# --------------------------------------------------------------------------- what is checked

def catalogue_texts(path: Path):
    """(where, Chinese) of each translated entry of a catalogue (fuzzy ones too: they are
    what the next translator starts from)."""
    for e in polib.pofile(str(path), wrapwidth=0):
        if e.msgstr and not e.obsolete:
            yield f"[{e.msgctxt or e.msgid[:30].replace(chr(10), ' ')}]", e.msgstr


def document_texts(path: Path):
    if path.suffix == ".ipynb":
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                yield f"cell {cell.get('id')}", cell.source
    else:
        yield "", path.read_text(encoding="utf-8")


SOURCES = [*CATALOGUES, *DOCUMENTS, *CHAPTERS]


def test_the_table_reads_and_the_check_can_fail():
    table = terms()
    by_use = {t.use: t for t in table}
    assert len(table) >= 10 and "运行最大值" in by_use["当前最大值"].banned and "算术强度" in by_use["计算访存比"].aliases
    assert misuses("运行最大值 $m$ 变大时", table) == ["'运行最大值' -> '当前最大值' (…运行最大值   变大时…)"]
    assert misuses("`FLOP/byte` 与 $a$", table) == []                          # code is a name
    assert misuses("读「计算访存比接近 1」时", table) == []
    assert misuses("它的算术强度很高", table) == ["the alias '算术强度' alone -> '计算访存比' beside it"]
    assert misuses("计算访存比（又称算术强度）", table) == []
    found = [m.split(" -> ")[0] for m in misuses("比 MHA 少 56.9×；是 MLA 的 71.1×；128 × 128K；64×64", table)]
    assert found == ["'56.9×'", "'71.1×'"]          # multiples; "128 × 128K" and "64×64" are products


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_one_word_per_concept(path):
    table = terms()
    texts = catalogue_texts(path) if path.suffix == ".po" else document_texts(path)
    found = [f"{where} {m}" for where, text in texts for m in misuses(text, table)]
    assert not found, (f"{path.relative_to(ROOT)}: {len(found)} word(s) the glossary (docs/glossary.zh.md, "
                       "One word per concept) says not to use:\n  " + "\n  ".join(found[:30]))


def _first_absorption(texts) -> str | None:
    """The first prose mention of 吸收 in the texts, with what surrounds it."""
    for text in texts:
        plain = checked_prose(text)
        k = plain.find("吸收")
        if k >= 0:
            return plain[max(0, k - 2): k + 2]
    return None


def test_absorption_is_introduced_as_matrix_absorption():
    chapters = [c.source for p in CHAPTERS for c in nbformat.read(p, as_version=4).cells if c.cell_type == "markdown"]
    readme = [(ROOT / "README.zh.md").read_text(encoding="utf-8")]
    for name, texts in (("the chapters", chapters), ("README.zh.md", readme)):
        first = _first_absorption(texts)
        assert first is not None and first.startswith("矩阵吸收"), \
            f"{name}: the first mention of absorption reads {first!r}; introduce it as 矩阵吸收"


# The Chinese sources the course grew from are not in the repository; where a copy is at
# hand (a translator's machine), every 「quotation」 must be found in one of them.
SEEDS = Path(os.environ.get("MLA_SEEDS", "/work/shared/seeds"))


def _bare(text: str) -> str:
    """What a verbatim comparison keeps: no spaces, no thousands separators (1{,}556{,}480,
    34,560), no backticks, none of the operators a quotation restores in brackets ([×])."""
    text = re.sub(r"\[[×≈+=−-]\]", "", text.replace("{,}", ""))
    return re.sub(r"[\s`]|(?<=\d),(?=\d)", "", text)


@pytest.mark.skipif(not SEEDS.is_dir(), reason=f"the Chinese sources are not here ({SEEDS}; MLA_SEEDS)")
def test_quotations_of_the_chinese_sources_are_verbatim():
    """Each 「quotation」 of a Chinese catalogue, cut at its ellipses (……), is in a source."""
    sources = [_bare(f.read_text(encoding="utf-8")) for f in sorted(SEEDS.glob("*.txt"))]

    def in_a_source(quote: str) -> bool:
        return all(any(_bare(part) in src for src in sources) for part in quote[1:-1].split("……") if _bare(part))

    quotes = [(path.relative_to(ROOT), where, q) for path in CATALOGUES for where, text in catalogue_texts(path)
              for q in QUOTE.findall(text)]
    assert len(quotes) >= 10
    missing = [f"{path} {where}: {q}" for path, where, q in quotes if not in_a_source(q)]
    assert not missing, "quoted, but not in any source:\n  " + "\n  ".join(missing)
    assert not in_a_source("「约 128 [×] 128K 的缓存」") and in_a_source("「约 128 [×] 128K [×] 128」")
    assert _bare("「1{,}556{,}480」 `x` 128 [×] 128K") == "「1556480」x128128K"
