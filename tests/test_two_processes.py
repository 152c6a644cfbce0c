"""CI's two processes (tests/conftest.py "two processes"): the units xdist hands out are
whole files, and the files that share a session's work (the executed chapters, the corpus's
grading) are one unit; every file the table names exists (a renamed file would otherwise
leave its unit silently, and its shared work would be done twice, or raced: two site builds
at once remove each other's build venv)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parent


def test_every_file_the_units_name_exists():
    named = [f"{name}.py" for names in conftest.SHARED_WORK.values() for name in names]
    assert [n for n in named if not (TESTS / n).is_file()] == []
    for unit in conftest.LONGEST_FIRST:
        assert unit in conftest.SHARED_WORK or (TESTS.parent / unit).is_file(), unit


def test_a_file_and_the_files_that_share_work_are_one_unit():
    unit = conftest.unit_of
    assert unit("tests/test_kernels.py::test_a[x-y]") == unit("tests/test_kernels.py::test_b") == "tests/test_kernels.py"
    assert unit("tests/test_notebooks.py::test_notebook_executes[01]") == unit(
        "tests/test_site_browser.py::test_chapter_runs_in_the_browser[zh/01_kv_cache.ipynb]") == "chapters"
    assert unit("tests/test_judge_corpus.py::test_corpus_attempt[p01/x.py]") == unit("tests/test_judge_i18n.py::t") == "corpus"
    assert unit("tests/test_judge_specs.py::t") != unit("tests/test_judge_corpus.py::t")
