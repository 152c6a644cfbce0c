#!/usr/bin/env python3
"""Grade your answers: `python practice/judge.py` (all), `python practice/judge.py 4` (one),
`--hint` for a hint, `--watch` to re-grade on save. grader/cli.py lists every option."""
import sys
from pathlib import Path

# Run as a script, this folder comes first on sys.path, so `import judge` would find this
# very file; import the implementation from the package instead, from the repo root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.entry import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
