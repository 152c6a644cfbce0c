"""python -m i18n update | build | check [chapter ... | site | judge | docs | README | teaching]

  update   bring each chapter's catalogue in step with its English notebook (new cells
           become untranslated entries, changed cells fuzzy with the old English kept),
           and the site's (i18n/zh_CN/site.po) with the strings of web/*.py, and the
           judge's (i18n/zh_CN/judge.po) with grader/*.py's and the problems' words (then
           compiles it into grader/locale/zh_CN/LC_MESSAGES/judge.mo)
  build    write notebooks/zh/ from the notebooks and the catalogues (the judge's .mo too)
  check    list what is untranslated, fuzzy or differs in numbers, formulas, code names or
           links (the site's: {placeholders} and HTML tags); exit 1 if anything does

Naming chapters (01, 02_mla...) does only those; `site` only the site's catalogue, `judge`
only the judge's; `docs` the documents (README.md -> README.zh.md, docs/teaching.md ->
docs/teaching.zh.md, through po4a: i18n/docs.py), `README` or `teaching` one of them.
"""
from __future__ import annotations

import sys

from . import docs, judge, notebooks, site


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("update", "build", "check"):
        print(__doc__.strip())
        return 2
    what, keys = argv[0], argv[1:]
    doc_keys = {d.name for d in docs.DOCS}
    chosen = [c for c in notebooks.chapters() if not keys or any(c.stem.startswith(k) for k in keys)]
    bad = 0
    named_docs = [k for k in keys if k in doc_keys]
    wanted_docs = docs.docs() if not keys or "docs" in keys else docs.docs(named_docs) if named_docs else []
    if wanted_docs and not docs.have_po4a():
        print(f"docs: {docs.INSTALL_HINT}", file=sys.stderr)
        return 1
    for doc in wanted_docs:   # the README and the teacher's guide, through po4a
        if what == "update":
            print(f"{doc.name}: " + ", ".join(f"{v} {k}" for k, v in docs.update(doc).items()))
        elif what == "build":
            print(f"wrote {docs.build(doc).relative_to(docs.ROOT)}")
        else:
            found = docs.problems(doc)
            bad += len(found)
            print("\n".join(found + [f"{doc.name}: {'complete' if not found else f'{len(found)} to do'}"]))
    if not keys or "site" in keys:   # the site's own words (landing page, book bar, lab note)
        if what == "update":
            print("site: " + ", ".join(f"{v} {k}" for k, v in site.update().items()))
        elif what == "check":
            found = site.problems()
            bad += len(found)
            print("\n".join(found + [f"site: {'complete' if not found else f'{len(found)} to do'}"]))
    if not keys or "judge" in keys:   # the judge's sentences and the problems' texts
        if what == "update":
            print("judge: " + ", ".join(f"{v} {k}" for k, v in judge.update().items()))
        elif what == "build":
            print(f"wrote {judge.compile_mo().relative_to(judge.ROOT)}")
        else:
            found = judge.problems()
            bad += len(found)
            print("\n".join(found + [f"judge: {'complete' if not found else f'{len(found)} to do'}"]))
    for ch in chosen:
        if what == "update":
            counts = notebooks.update(ch)
            print(f"{ch.stem}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        elif what == "build":
            print(f"wrote {notebooks.build(ch).relative_to(notebooks.ROOT)}")
        else:
            found = notebooks.problems(ch)
            bad += len(found)
            for p in found:
                print(p)
            print(f"{ch.stem}: {'complete' if not found else f'{len(found)} to do'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
