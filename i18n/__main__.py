"""python -m i18n update | build | check [chapter ...]

  update   bring each chapter's catalogue in step with its English notebook (new cells
           become untranslated entries, changed cells fuzzy with the old English kept)
  build    write notebooks/zh/ from the notebooks and the catalogues
  check    list what is untranslated, fuzzy or differs in numbers, formulas, code names or
           links; exit 1 if anything does
"""
from __future__ import annotations

import sys

from . import notebooks


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("update", "build", "check"):
        print(__doc__.strip())
        return 2
    what, keys = argv[0], argv[1:]
    chosen = [c for c in notebooks.chapters() if not keys or any(c.stem.startswith(k) for k in keys)]
    bad = 0
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
