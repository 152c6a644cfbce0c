"""``python -m grader.classroom ARGS`` = ``python -m classroom ARGS``, with a note (for one
release: scripts written before the move keep working and learn the new name). It starts
the new command rather than importing it: the judge (grader/) never imports the teacher's
tools."""
import os
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    print("note: the teacher's tools moved: `python -m grader.classroom` is now `python -m classroom` "
          "(this old name goes in the next release).", file=sys.stderr)
    root = str(Path(__file__).resolve().parent.parent.parent)   # where classroom/ sits beside grader/
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    sys.exit(subprocess.run([sys.executable, "-m", "classroom", *sys.argv[1:]], env=env).returncode)
