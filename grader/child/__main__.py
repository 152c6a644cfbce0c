"""Run as a script by grader/sandbox.py (``python -I -u .../child/__main__.py --fd N --job F``):
the folder above this package goes on the path, so the package imports as ``child`` (in the
sandbox, /judge holds nothing else), then ``main`` runs the job."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from child.protocol import _REAL_EXIT  # noqa: E402
from child.run import main  # noqa: E402

if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # leave now: threads or atexit hooks the learner's code started must not keep the
    # process alive (the judge would wait for them)
    _REAL_EXIT(0)
