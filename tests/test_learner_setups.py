"""The course as a learner has it: a clone whose practice/ holds their answers, and the
light install. Both run the default `python -m pytest` (the smoke set) in a copy of the
course, as the learner would type it, so they take minutes: slow (CI, --full).

- a learner who solved problems (every model answer in practice/, one wrong attempt, one
  file that does not even parse, hints already seen) still gets a green default run, and
  the run leaves their files as they were;
- `bash setup.sh --light` makes a venv without torch/triton in which the judge's overview
  runs (problem 12 says what it needs) and the smoke set passes, the torch tests skipped
  with their reason. Its size is printed (README quotes it)."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _env(course: Path, **extra) -> dict:
    """The learner's environment: none of this run's PYTHONPATH, CI or venv settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "CI", "VIRTUAL_ENV", "PYTEST_ADDOPTS") and not k.startswith("PYTEST_")}
    env.update(extra)
    return env


def _digest(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _git(course: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=learner", "-c", "user.email=learner@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=course, check=True, capture_output=True, timeout=120)


def test_a_learners_solved_practice_keeps_the_default_run_green(course_copy):
    course = course_copy
    _git(course, "init", "-q")
    _git(course, "add", "-A")
    _git(course, "commit", "-q", "-m", "the course as cloned")
    practice = course / "practice"
    for f in sorted((course / "solutions").glob("p[0-9][0-9]_*.py")):
        shutil.copy2(f, practice / f.name)  # solved, as a learner's file would be
    wrong = (course / "solutions" / "p01_kv_cache_bytes.py").read_text()
    (practice / "p01_kv_cache_bytes.py").write_text(wrong.replace("d_latent + d_rope", "d_latent"))
    (practice / "p05_lse_merge.py").write_text("def lse_merge(outs, lses:\n    return  # half typed\n")
    (practice / ".judge_hints.txt").write_text("choose_path 2\n")
    before = _digest(practice)

    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=course,
                         env=_env(course, PYTHONPATH=str(course)), capture_output=True, text=True, timeout=1800)
    tail = run.stdout[-6000:] + run.stderr[-3000:]
    assert run.returncode == 0, f"the default run fails on a learner's solved practice/:\n{tail}"
    assert re.search(r"\d+ passed", run.stdout) and "failed" not in run.stdout.splitlines()[-1], tail
    assert "This was the smoke set" in run.stdout and "python -m pytest --full" in run.stdout, tail
    assert _digest(practice) == before, "the tests changed the learner's practice/"
    print(run.stdout.splitlines()[-1])


def test_light_install_runs_the_judge_and_the_smoke_set(course_copy):
    course = course_copy
    setup = subprocess.run(["bash", "setup.sh", "--light"], cwd=course, env=_env(course),
                           capture_output=True, text=True, timeout=1800)
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    py = str(course / ".venv" / "bin" / "python")
    probe = subprocess.run([py, "-c", "import importlib.util as u; print(u.find_spec('torch') is None, "
                                      "u.find_spec('triton') is None, u.find_spec('matplotlib') is not None)"],
                           env=_env(course), capture_output=True, text=True, timeout=120)
    assert probe.stdout.split() == ["True", "True", "True"], probe.stdout + probe.stderr

    overview = subprocess.run([py, "practice/judge.py", "--seed", "3"], cwd=course, env=_env(course),
                              capture_output=True, text=True, timeout=600)
    assert overview.returncode == 0, overview.stdout + overview.stderr
    line12 = next(l for l in overview.stdout.splitlines() if "triton_inner_loop" in l)
    assert "torch" in line12 and ("unavailable" in line12 or "needs" in line12), overview.stdout
    assert re.search(r"·\s+1 kv_cache_bytes\s+not started", overview.stdout), overview.stdout

    smoke = subprocess.run([py, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"], cwd=course,
                           env=_env(course), capture_output=True, text=True, timeout=1800)
    tail = smoke.stdout[-6000:] + smoke.stderr[-3000:]
    assert smoke.returncode == 0, f"the smoke set fails on a light install:\n{tail}"
    assert re.search(r"SKIPPED \[\d+\] tests/test_kernels\.py:\d+: needs torch \+ triton", smoke.stdout), tail
    size = subprocess.run(["du", "-sh", str(course / ".venv")], capture_output=True, text=True).stdout.split()[0]
    print(f"light install: .venv is {size}; smoke set: {smoke.stdout.splitlines()[-1]}")
