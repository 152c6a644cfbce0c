"""The teacher's tools, a product of their own beside the judge students run (grader/):
``python -m classroom COMMAND`` (see __main__.py and docs/teaching.md).

  release.py      the student bundle, checked for model answers (leaks.py); readme.py
                  makes its README from README.md (the student edition)
  submissions.py  find each student's files in a folder of folders and zips; notebooks.py
                  turns a notebook hand-in into a practice file (statically) or refuses it
  grade.py        grade a class through the judge; pool.py + worker.py run the attempts;
                  verdicts.py bounds and checks every verdict record written and read
  gradebook.py    gradebook.csv, results/<id>.json, summary.md/.json/.png, matching.md
  shown.py        one escaping function per medium (terminal, Markdown, CSV, JSON) for
                  every string a student chose
  platforms.py    GitHub Classroom's workflow, Gradescope's autograder (gradescope/ holds
                  the autograder's setup.sh and run_autograder)
  slides.py       reveal.js lecture decks from the chapters
  guide.py        the generated sections of docs/teaching.md
  committed.py    the course's files as of the last commit
  execute.py      run a chapter the one way the course does (the decks, the site's book,
                  the tests)

Imports point down: classroom uses grader (the judge) and mlacourse; neither imports it.
Nothing here ships to students: the release leaves classroom/ out. Synthetic classes for
the tests and for timing are tests/synthetic_class.py.
"""
