"""python -m authoring regenerate | check [--root DIR]

  regenerate   rewrite every generated file, in order (authoring/registry.py): the practice
               stubs, README's problem table and map, the chapters' practice lists, GitHub
               Classroom's workflow, the judge's catalogue (compiled), the site's catalogue,
               the teacher's guide, the Chinese README, guide and chapters; then count what
               is left to translate (translate it, then run this again)
  check        name every generated file that is stale (exit 1 if any); a test runs it
  --root DIR   the course in DIR (a copy of this repository) instead of this one
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import course, registry


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m authoring", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["regenerate", "check"])
    ap.add_argument("--root", default=str(course.REPO), help="the course's folder (default: this repository)")
    a = ap.parse_args(argv)
    with course.at(Path(a.root)) as root:
        if a.what == "regenerate":
            notes = registry.regenerate(root)
            left = registry.to_translate(root)
            if left:
                print("left to translate (python -m i18n check lists them; then run this again):")
                for cat, n in left.items():
                    print(f"  {cat}: {n}")
            else:
                print("nothing left to translate")
            return 1 if any("po4a" in n for n in notes) else 0
        found = registry.stale(root)
        for name, lines in found.items():
            print(f"{name}:")
            print("".join(f"  {line}\n" for line in lines), end="")
        print(f"stale: run `{registry.COMMAND}`" if found else "every generated file is fresh")
        return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
