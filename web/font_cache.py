"""matplotlib's font cache as the browser's matplotlib would build it:

    .venv-pyodide-versions/bin/python web/font_cache.py OUT_FOLDER

Pyodide's matplotlib looks for its font list in its own folder (matplotlib/fontlist.json,
a Pyodide patch) and its wheel has none, so every kernel rebuilt the list on the first
import in each chapter and said so on stderr ("Matplotlib is building the font cache; this
may take a moment."), a red box in the lab. web/build.py runs this with the browser's
matplotlib version (.venv-pyodide-versions) and ships the file in the course wheel as
matplotlib/fontlist.json, so the list is read instead.

Pyodide has no system fonts: the list holds matplotlib's own (mpl-data/fonts), which the
cache names relative to mpl-data, so the same file is valid there. Prints the file's name
(fontlist-v<N>.json, N = the cache format of that matplotlib)."""
from __future__ import annotations

import sys
from pathlib import Path


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    import matplotlib
    import matplotlib.font_manager as fm

    system_fonts = fm.findSystemFonts
    # only the folders matplotlib names (its own fonts), not this machine's system fonts
    fm.findSystemFonts = lambda fontpaths=None, fontext="ttf": \
        system_fonts(fontpaths, fontext) if fontpaths else []
    manager = fm.FontManager()
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"fontlist-v{fm.FontManager.__version__}.json"
    fm.json_dump(manager, path)
    absolute = [f.fname for f in manager.ttflist + manager.afmlist
                if not Path(f.fname).resolve().is_relative_to(Path(matplotlib.get_data_path()).resolve())]
    if absolute:
        print(f"error: fonts outside mpl-data in the cache: {absolute[:3]}", file=sys.stderr)
        return 1
    print(path.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
