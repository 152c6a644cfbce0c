"""A classroom release leaves solutions/ out: the judge must still grade.

The test copies the learner-facing part of the repo (no solutions/; practice/ as the
committed stubs, see tests/pristine.py; of each problem's folder its spec, and the named
mistakes as their recorded answers, as `python -m classroom release` ships them) into a temporary folder, puts
one model answer in place of its stub -- as a learner who solved the problem would have
it -- and runs that copy's judge as a learner would."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ["judge.py", "grader", "mlacourse", "practice"]


def make_release(dest: Path, stubs: Path) -> Path:
    for name in RELEASE:
        src = ROOT / name
        if name == "practice":
            shutil.copytree(stubs, dest / name)
            shutil.copy2(src / "judge.py", dest / name / "judge.py")
        elif src.is_dir():
            shutil.copytree(src, dest / name, ignore=_not_shipped)
        else:
            shutil.copy2(src, dest / name)
    assert not (dest / "solutions").exists()
    from classroom.release import recorded_mistakes
    for rel, data in recorded_mistakes().items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    return dest


def _not_shipped(folder, names):
    """What copytree leaves out: caches, state, and of each problem's folder what a release
    does not ship (grader.problems.shipped)."""
    from grader.problems import shipped
    rel = Path(folder).resolve().relative_to(ROOT).as_posix()
    return {n for n in names if n in ("__pycache__", ".judge_hints.txt") or not shipped(f"{rel}/{n}")}


def judge(release: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "practice/judge.py", *args], cwd=release,
                          capture_output=True, text=True, timeout=120)


def test_release_grades_a_solved_problem_and_a_stub(tmp_path, stubs):
    release = make_release(tmp_path, stubs)
    shutil.copy2(ROOT / "solutions" / "p04_choose_path.py", release / "practice" / "p04_choose_path.py")

    solved = judge(release, "4")
    assert solved.returncode == 0, solved.stdout + solved.stderr
    # PASSED also shows that the copy's own judge ran: the repo's judge would have graded
    # the repo's practice/p04 stub and said "not started"
    assert "PASSED" in solved.stdout
    not_started = judge(release, "8")
    assert not_started.returncode != 0
    assert "not started" in not_started.stdout.lower()


def test_release_json_report_scores(tmp_path, stubs):
    import json

    release = make_release(tmp_path, stubs)
    shutil.copy2(ROOT / "solutions" / "p01_kv_cache_bytes.py", release / "practice" / "p01_kv_cache_bytes.py")
    out = judge(release, "1", "--json")
    report = json.loads(out.stdout)
    assert report["status"] == "pass", report
    assert report["score"] == report["max_score"] > 0


def test_release_names_a_slip_from_the_recorded_mistakes(tmp_path, stubs):
    """Without the mistakes' files the copy's judge still names a slip that shows on a
    public case: every new token attending to all n_ctx tokens (problem 4)."""
    release = make_release(tmp_path, stubs)
    assert not list((release / "grader" / "problems" / "p04_choose_path").glob("*.diff"))
    slip = (ROOT / "solutions" / "p04_choose_path.py").read_text().replace(
        "pairs = n_new * n_ctx - n_new * (n_new - 1) // 2", "pairs = n_new * n_ctx")
    (release / "practice" / "p04_choose_path.py").write_text(slip)
    out = judge(release, "4")
    assert out.returncode != 0 and "Likely slip" in out.stdout, out.stdout[-2000:]
