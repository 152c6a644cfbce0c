"""``python -m grader.classroom ARGS`` = ``python -m classroom ARGS``, with a note (for one
release: scripts written before the move keep working and learn the new name)."""
import sys

if __name__ == "__main__":
    print("note: the teacher's tools moved: `python -m grader.classroom` is now `python -m classroom` "
          "(this old name goes in the next release).", file=sys.stderr)
    from classroom.__main__ import main
    sys.exit(main())
