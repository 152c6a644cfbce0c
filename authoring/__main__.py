"""python -m authoring regenerate | check [--root DIR]
   python -m authoring slip SLIP_FILE FILE [--from BASE]

  regenerate   rewrite every generated file, in order (authoring/registry.py): the practice
               stubs, README's problem table and map, the chapters' practice lists, GitHub
               Classroom's workflow, the judge's catalogue (compiled), the site's catalogue,
               the teacher's guide, the Chinese README, guide and chapters; then list what
               is left to translate (translate it, then run this again)
  check        name every generated file that is stale (exit 1 if any); a test runs it
  slip         write the whole learner file FILE (a docstring header, then code) into
               SLIP_FILE (a problem's mistakes.diff or corpus/wrong.diff) as its change to
               BASE (default learner.py), under FILE's name: a new entry, or in place of
               the entry of that name (grader/slips.py)
  --root DIR   the course in DIR (a copy of this repository) instead of this one
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import course, registry


def slip(slip_file: Path, file: Path, base: str) -> str:
    """Add (or replace) the entry of ``file`` in ``slip_file``; what was done, in words."""
    from grader import slips
    home = slips.problem_folder(slip_file)
    entry = slips.make_entry(file.name, file.read_text(encoding="utf-8"), base,
                             slips.base_path(home, base).read_text(encoding="utf-8"))
    entries = slips.read(slip_file) if slip_file.is_file() else []
    text = slip_file.read_text(encoding="utf-8") if slip_file.is_file() else ""
    intro = "\n".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in text.split("\n\n=== ")[0].split("\n") if line.startswith("#")) \
        or f"{home.name}: entries expanded by grader/slips.py."
    replaced = any(e.name == entry.name for e in entries)
    entries = [entry if e.name == entry.name else e for e in entries] + ([] if replaced else [entry])
    slips.write(slip_file, entries, intro)
    return f"{'replaced' if replaced else 'added'} {entry.name} in {slip_file} ({len(entry.changes)} change(s) to {base})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m authoring", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["regenerate", "check", "slip"])
    ap.add_argument("paths", nargs="*", help="slip: the slip file, then the learner file")
    ap.add_argument("--from", dest="base", default="learner.py", help="slip: the base, relative to the problem's folder")
    ap.add_argument("--root", default=str(course.REPO), help="the course's folder (default: this repository)")
    a = ap.parse_args(argv)
    if a.what == "slip":
        if len(a.paths) != 2:
            ap.error("slip takes SLIP_FILE FILE")
        print(slip(Path(a.paths[0]), Path(a.paths[1]), a.base))
        return 0
    with course.at(Path(a.root)) as root:
        if a.what == "regenerate":
            notes = registry.regenerate(root)
            left = registry.to_translate(root)
            if left:
                print("left to translate (then run this again):")
                for cat, items in left.items():
                    print(f"  {cat}: {len(items)}")
                    print("".join(f"    {item}\n" for item in items[:12]), end="")
                    if len(items) > 12:
                        print("    ... (python -m i18n check lists them all)")
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
