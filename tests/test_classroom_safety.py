"""What a teacher's tools do with names, caches and reports they did not choose: safe and
collision-free student ids, escaped names, CSV cells that are never formulas, a cache
checked against what was graded, reports that survive one failed write, stubs from the
last commit, and `grade` refusing untrusted code without the sandbox. Fast: the tiny
classes here are the teacher's own files (``isolation="process"``: --trust-submissions)."""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from grader import jail, runner
from classroom import committed, gradebook, submissions
from tests import synthetic_class as sy
from classroom.grade import SandboxMissing, Settings, grade_class, read_cached, stub_hashes

ROOT = Path(__file__).resolve().parent.parent
P1 = runner.find(1)


def settings(**kw):
    return Settings(5, "test", [P1], workers=1, isolation="process", **kw)


def quiet(*a):
    pass


@pytest.mark.parametrize("name,sid", [
    ("alice", "alice"), ("_student09", "_student09"), ("Zoë", "Zoë"), ("a b", "a_b"),
    ("evil\u202eexe", "evil_exe"), ("new\nline", "new_line"), ("..", "student"), (".x", "x"),
    ("=cmd|' /C calc'!A0", "cmd_C_calc_A0"), ("+7+7", "+7+7"), ("zero\u200bwidth", "zero_width")])
def test_student_ids_are_safe(name, sid):
    assert submissions.student_id(name) == sid


def test_a_long_name_is_capped_with_a_hash_of_the_whole():
    a, b = submissions.student_id("y" * 252), submissions.student_id("y" * 251 + "z")
    assert len(a) == submissions.MAX_ID and a != b and a[:40] == b[:40]


def test_printable_escapes_control_and_bidi_characters():
    assert submissions.printable("a\nb\u202ec\\d e") == "a\\nb\\u202ec\\\\d e"


def write(root: Path, sid: str, rel: str, data: bytes):
    f = root / sid / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(data)


def test_colliding_and_lookalike_ids_are_all_graded_and_flagged(tmp_path):
    right = sy.right(P1, "x").text
    for sid in ("student09", "_student09", "a b", "a_b"):
        write(tmp_path, sid, "practice/p01_kv_cache_bytes.py", right if sid == "student09" else b"x = 1\n")
    subs, notes = submissions.discover(tmp_path, [P1], {})
    ids = [s.student for s in subs]
    assert "student09" in ids and "_student09" in ids and len(ids) == 4 and len(set(ids)) == 4
    assert next(s for s in subs if s.student == "student09").matches[1].data == right
    # "a b" and "a_b" both read as a_b: the entry named exactly a_b keeps it, both are flagged
    assert "a_b" in ids and next(s for s in subs if s.student == "a_b").source == "a_b/"
    assert sum("NAME COLLISION" in n for n in notes) == 2
    assert all(s.collision for s in subs if s.source in ("a b/", "a_b/"))


def test_a_newline_in_a_file_name_cannot_forge_a_report_line(tmp_path):
    write(tmp_path, "mallory", "notes\n## student01\nx.py", b"x = 1\n")
    subs, _ = submissions.discover(tmp_path, [P1], {})
    assert all("\n" not in n for n in subs[0].notes) and any("\\n## student01" in n for n in subs[0].notes)


def test_csv_cells_never_start_a_formula():
    for text in ("=1+1", "+7+7", "-2", "@SUM(A1)", " =1+1"):
        assert gradebook.cell(text) == "'" + text
    assert gradebook.cell("\tx") == "\\tx" and gradebook.cell("\r=1") == "\\r=1"   # escaped, inert
    assert gradebook.cell("alice") == "alice"


@pytest.fixture(scope="module")
def small_class(tmp_path_factory):
    base = tmp_path_factory.mktemp("small")
    subs = base / "subs"
    write(subs, "alice", "practice/p01_kv_cache_bytes.py", sy.right(P1, "alice").text)
    write(subs, "bob", "practice/p01_kv_cache_bytes.py", sy.stub(P1).text)
    return subs


def test_the_cache_is_checked_against_what_was_graded(small_class, tmp_path):
    out = tmp_path / "grades"
    res = grade_class(small_class, out, settings(), progress=False, log=quiet)
    assert res.graded_now == 2
    cache = next((out / ".cache").iterdir())
    alice_sha = hashlib.sha256(sy.right(P1, "alice").text).hexdigest()
    rec_file = cache / f"p01-{alice_sha[:40]}.json"
    rec = json.loads(rec_file.read_text())
    assert rec["graded_sha256"] == alice_sha and rec["status"] == "passed"
    # a record that is not this file's (poisoned, or of other bytes) is not believed
    forged = dict(rec, status="failed", graded_sha256="0" * 64)
    rec_file.write_text(json.dumps(forged))
    assert read_cached(rec_file, (1, alice_sha)) is None
    # and a staged copy that is not exactly the submission is rewritten before grading
    staged = next((out / ".work").glob(f"{alice_sha[:24]}/*.py"))
    staged.write_bytes(sy.stub(P1).text)
    again = grade_class(small_class, out, settings(), progress=False, log=quiet)
    assert again.graded_now == 1
    assert staged.read_bytes() == sy.right(P1, "alice").text
    alice = next(g for g in again.students if g.sub.student == "alice")
    assert alice.records[1]["status"] == "passed"


def test_one_report_that_cannot_be_written_loses_nothing_else(small_class, tmp_path):
    out = tmp_path / "grades"
    res = grade_class(small_class, out, settings(), progress=False, log=quiet)
    (out / "results" / "alice.json.part").mkdir(parents=True)   # alice's file cannot be written
    written = gradebook.write(res, out)
    assert [name for name, _ in written["failed"]] == ["results/alice.json"]
    for name in ("gradebook.csv", "verdicts.csv", "summary.md", "summary.png", "matching.md", "results/bob.json"):
        assert (out / name).is_file(), name


def _git(repo: Path, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_stubs_come_from_the_last_commit_and_a_dirty_tree_grades_the_same(small_class, tmp_path):
    repo = tmp_path / "course"
    (repo / "practice").mkdir(parents=True)
    stub = (ROOT / "practice" / P1.filename).read_bytes()
    (repo / "practice" / P1.filename).write_bytes(stub)
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=t@x", "-c", "user.name=t", "add", "-A")
    _git(repo, "-c", "user.email=t@x", "-c", "user.name=t", "commit", "-qm", "stubs")
    clean = stub_hashes([P1], root=repo)
    (repo / "practice" / P1.filename).write_bytes((ROOT / "solutions" / P1.filename).read_bytes())  # solved in place
    warnings: list = []
    dirty = stub_hashes([P1], root=repo, warnings=warnings)
    assert dirty == clean == {1: hashlib.sha256(stub).hexdigest()}
    assert warnings and "uncommitted" in warnings[0] and P1.filename in warnings[0]
    files, source, _ = committed.files(repo, ["practice"])
    assert source.startswith("git ") and files == {f"practice/{P1.filename}": stub}
    outs = []
    for k, stubs in enumerate((clean, dirty)):
        out = tmp_path / f"grades{k}"
        res = grade_class(small_class, out, settings(stubs=stubs), progress=False, log=quiet)
        gradebook.write(res, out)
        outs.append(out)
    for name in ("gradebook.csv", "verdicts.csv", "matching.md", "summary.md"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    assert "unchanged stub" in (outs[0] / "matching.md").read_text()


def test_grade_refuses_untrusted_code_without_the_sandbox(small_class, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(jail, "probe", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(SandboxMissing, match="apt-get install bubblewrap"):
        grade_class(small_class, tmp_path / "g", Settings(5, "test", [P1], workers=1), progress=False, log=quiet)
    from classroom.__main__ import main
    assert main(["grade", str(small_class), "--out", str(tmp_path / "g"), "--problems", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "grade refused" in err and "--trust-submissions" in err and "macOS" in err
    assert not (tmp_path / "g" / "gradebook.csv").exists()
    assert main(["grade", str(small_class), "--out", str(tmp_path / "g"), "--problems", "1", "--no-progress",
                 "--trust-submissions", "--workers", "1"]) == 0
    assert "warning: --trust-submissions" in capsys.readouterr().err


def test_the_submissions_folder_is_never_written(small_class, tmp_path):
    before = {p: p.read_bytes() for p in small_class.rglob("*") if p.is_file()}
    out = tmp_path / "grades"
    gradebook.write(grade_class(small_class, out, settings(), progress=False, log=quiet), out)
    assert {p: p.read_bytes() for p in small_class.rglob("*") if p.is_file()} == before
    with pytest.raises(ValueError, match="inside"):
        grade_class(small_class, small_class / "grades", settings(), progress=False, log=quiet)
    with pytest.raises(ValueError, match="inside"):
        grade_class(small_class, small_class.parent, settings(), progress=False, log=quiet)


def test_an_attempt_the_machinery_failed_is_not_graded_not_zero(small_class, tmp_path, monkeypatch, capsys):
    """The pool hands an attempt back as not graded: the gradebook says so (no points,
    not 0), nothing is cached, `grade` exits with 3, and the next run grades it."""
    from classroom import pool
    real = pool.run_jobs

    def failing(jobs, workers, on_done, on_not_graded, **kw):
        bob = [j for j in jobs if j.sha256 == hashlib.sha256(sy.stub(P1).text).hexdigest()]
        on_not_graded(bob[0], "tried 3 times, and each time the grading machinery failed, not the attempt")
        return real([j for j in jobs if j not in bob], workers, on_done, on_not_graded, **kw)
    monkeypatch.setattr(pool, "run_jobs", failing)
    from classroom.__main__ import main
    out = tmp_path / "grades"
    args = ["grade", str(small_class), "--out", str(out), "--problems", "1", "--no-progress",
            "--trust-submissions", "--workers", "1", "--seed", "5"]
    assert main(args) == 3
    assert "NOT GRADED" in capsys.readouterr().err
    book = (out / "gradebook.csv").read_text()
    assert "bob,not graded,0,1" in book and "alice,1,1,1" in book
    assert "not graded" in (out / "summary.md").read_text()
    assert len(list((out / ".cache").glob("*/*.json"))) == 1       # alice's only
    monkeypatch.setattr(pool, "run_jobs", real)
    assert main(args) == 0
    assert "bob,0,0,1" in (out / "gradebook.csv").read_text()
