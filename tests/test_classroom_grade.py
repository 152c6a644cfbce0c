"""Grading a class: a synthetic class of 36 students whose verdicts are known by
construction -- right, wrong, named-mistake, missing, misnamed, nested, empty, binary,
broken, timing-out, memory-hogging, reference-importing and tampering attempts, folders
and zips, an unreadable zip -- is graded twice from scratch with the same seed: the
verdicts must be exactly the expected ones and every graded file byte-identical. A third
run after deleting some cached verdicts regrades exactly those. Grading runs in the OS
sandbox (tests/sandbox_support.py: skipped without bubblewrap, a failure in CI)."""
import csv
import json
import os
import time
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader import runner
from grader.records import Reason
from classroom import gradebook, submissions
from tests import synthetic_class as sy
from classroom.grade import Settings, grade_class
from tests.sandbox_support import require_sandbox

PROBLEMS = [1, 4, 5]
SEED = 20250301
DEADLINE = datetime(2025, 3, 1, 23, 59, tzinfo=timezone.utc)
GRADED_FILES = ("gradebook.csv", "verdicts.csv", "matching.md", "summary.md", "summary.json",
                "grading.json", "seed.txt", "summary.png")


def _p(n):
    return runner.find(n)


def one_layer_p01(sid):
    """Problem 1 without the layer count: the judge names the slip 'one layer'."""
    text = (sy.ROOT / "solutions" / "p01_kv_cache_bytes.py").read_text()
    slip = text.replace("* n_layers * bytes_per_element", "* bytes_per_element")
    assert slip != text, "solutions/p01 changed: update this slip"
    return sy.Attempt(f"# {sid}\n{slip}".encode(), "failed", "wrong_answer", "one layer")


def build_class(root: Path) -> tuple[list, dict]:
    """(students, expected {(student, problem): (status, reason, mistake)})."""
    P = {n: _p(n) for n in PROBLEMS}
    S = []

    def student(sid, kinds=None, names=None, as_zip=False, at=None, shared=False):
        s = sy.Student(sid, as_zip=as_zip, submitted_at=at)
        for n, kind in (kinds or {}).items():
            a = kind(P[n], "filler" if shared else sid) if callable(kind) else kind
            rel = (names or {}).get(n, f"practice/{P[n].filename}")
            s.files[rel] = a.text
            s.expected[n] = a
        S.append(s)
        return s

    R, W = sy.right, sy.wrong
    student("s01_right", {1: R, 4: R, 5: R}, at="2025-03-01T20:00:00+00:00")
    student("s02_zip_right", {1: R, 4: R, 5: R}, as_zip=True, at="2025-03-02T08:00:00+00:00")
    student("s03_misnamed", {1: R, 4: R, 5: R},
            {1: "P01_KV_Cache_Bytes.py", 4: "choose_path.py", 5: "hw/week4/p5.py"})
    s = student("s04_copies", {1: R, 4: R}, {1: "p01_kv_cache_bytes (1).py"})
    s.files["old/p04_choose_path.py"] = sy.stub(P[4]).text      # an older, unchanged stub
    s = student("s05_whole_repo", {1: R, 4: R, 5: W})
    s.files["grader/problems/p04_choose_path.py"] = b"raise SystemExit('the spec, not an attempt')\n"
    s.files[".venv/lib/p05_lse_merge.py"] = b"x = 1\n"
    s.files["notes.py"] = b"print('not an attempt')\n"
    student("s06_wrong", {1: W, 4: W, 5: W})
    student("s07_named_slips", {1: one_layer_p01("s07"), 4: sy.noncausal_p04("s07"), 5: R})
    student("s08_not_started", {1: sy.stub, 4: sy.stub, 5: sy.stub})
    student("s09_nothing")
    (root / "s09_nothing").mkdir(parents=True, exist_ok=True)
    student("s10_timeout", {1: sy.timeout, 4: R, 5: R})
    student("s11_memory", {4: sy.memory_hog, 5: R})
    student("s12_reference", {1: sy.uses_reference, 4: sy.uses_reference, 5: sy.uses_reference})
    student("s13_kills_grader", {1: sy.signals_grader, 5: sy.kills_grader})
    student("s14_reads_classmates", {4: sy.reads_classmates})
    student("s15_writes_gradebook", {1: sy.writes_gradebook})
    student("s16_exits", {5: sy.exits}, as_zip=True)
    student("s17_syntax", {1: sy.syntax_error})
    student("s18_empty", {4: sy.empty})
    student("s19_binary", {5: sy.binary})
    s = student("s21_notebook_only")   # named for problem 4, no function in it: refused, loudly
    s.files["practice/p04.ipynb"] = b'{"cells": []}'
    s.expected[4] = sy.Attempt(b"", "failed", "notebook_unusable")
    student("s22_big_file").files["practice/p01_kv_cache_bytes.py"] = b"#" * (submissions.MAX_FILE_BYTES + 10)
    student("s23_unrelated").files["homework.py"] = b"def f():\n    return 1\n"
    # claims an early time inside its own zip (and the zip's entries are dated 2024): the
    # teacher's times file says late, and only that counts
    student("s25_claims_early", {1: R}, as_zip=True, at="2025-02-01T00:00:00+00:00")
    for i in range(13):  # the rest of the class: identical files de-duplicate, as in real classes
        kinds = [{1: R, 4: R, 5: R}, {1: W, 4: R, 5: sy.stub}, {1: R, 5: R}, {4: sy.stub}][i % 4]
        student(f"t{i:02d}", kinds, as_zip=(i % 3 == 0), shared=True,
                at="2025-03-01T12:00:00+00:00" if i % 2 else None)
    sy.write_class(root, S)
    (root / "s20_broken.zip").write_bytes(b"PK\x03\x04 this is not really a zip")
    link = root / "s24_symlink" / "practice"
    link.mkdir(parents=True)
    os.symlink(sy.ROOT / "solutions" / P[1].filename, link / P[1].filename)
    expected = {}
    for st in S + [sy.Student("s20_broken"), sy.Student("s24_symlink")]:
        for n in PROBLEMS:
            a = st.expected.get(n)
            expected[(st.sid, n)] = (a.status, a.reason, a.mistake) if a else ("missing", "missing", "")
    return expected


# the teacher's side: when the LMS says each one handed in (submissions.teacher_times)
TIMES = {"s01_right": "2025-03-01T20:00:00+00:00", "s02_zip_right": "2025-03-02T08:00:00+00:00",
         "s25_claims_early": "2025-03-02T09:30:00+00:00", "t01": "2025-03-01T12:00:00+00:00"}


def settings(seed=SEED):
    times = {k: datetime.fromisoformat(v) for k, v in TIMES.items()}
    return Settings(seed, "test", [_p(n) for n in PROBLEMS], workers=2, deadline=DEADLINE, times=times)


def read_verdicts(out: Path) -> dict:
    with open(out / "verdicts.csv", newline="") as f:
        return {(r["student"], int(r["problem"])): (r["status"], r["reason"] or "", r["mistake"])
                for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory, request):
    require_sandbox()
    base = tmp_path_factory.mktemp("class")
    subs = base / "submissions"
    expected = build_class(subs)
    runs = []
    for k in range(2):  # twice from scratch: no cache shared
        out = base / f"grades{k}"
        t0 = time.monotonic()
        res = grade_class(subs, out, settings(), progress=False, log=lambda *a: None)
        gradebook.write(res, out)
        took = time.monotonic() - t0
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():   # shown even without -s
            print(f"\n[classroom] graded the synthetic class ({len(res.students)} students x "
                  f"{len(PROBLEMS)} problems, {res.attempts} distinct attempts) in {took:.1f} s "
                  f"with 2 workers (run {k + 1})")
        runs.append((out, res, took))
    return subs, expected, runs


def test_the_class_meets_the_common_reasons(graded):
    _, expected, runs = graded
    students = {s for s, _ in expected}
    assert len(students) >= 30
    reasons = {r for _, r, _ in expected.values()}
    for need in ("", "wrong_answer", "missing", "timeout", "memory", "uses_reference", "exception",
                 "import_error", "not_started", "exit", "missing_function", "wrong_type"):
        assert need in reasons, need


def test_the_gradebook_says_every_reason_in_words():
    """Every Reason a verdict can carry has a teacher's phrase in summary.md (PASSED needs none)."""
    assert set(gradebook.REASONS) == set(Reason) - {Reason.PASSED}
    assert all(isinstance(words, str) and words for words in gradebook.REASONS.values())


def test_verdicts_are_exactly_the_expected_ones(graded):
    _, expected, runs = graded
    got = read_verdicts(runs[0][0])
    want = {k: (st, "" if st == "passed" else r, m) for k, (st, r, m) in expected.items()}
    wrong = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}
    assert not wrong, f"(got, expected) differ: {wrong}"
    assert set(got) == set(want)


def test_a_second_run_writes_the_same_bytes(graded):
    _, _, runs = graded
    (a, _, _), (b, _, _) = runs
    for name in GRADED_FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    ra = sorted(p.name for p in (a / "results").glob("*.json"))
    assert ra == sorted(p.name for p in (b / "results").glob("*.json")) and len(ra) >= 30
    for name in ra:
        assert (a / "results" / name).read_bytes() == (b / "results" / name).read_bytes(), name
    assert str(a) not in (a / "results" / "s15_writes_gradebook.json").read_text()


def test_gradebook_scores_totals_and_late_flags(graded):
    _, expected, runs = graded
    with open(runs[0][0] / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    for sid, row in rows.items():
        passed = sum(expected[(sid, n)][0] == "passed" for n in PROBLEMS)
        assert float(row["total"]) == passed and float(row["max"]) == len(PROBLEMS)
    teacher = "the teacher's times file"
    assert rows["s01_right"]["late"] == "no" and rows["s01_right"]["submitted_at_from"] == teacher
    assert rows["s02_zip_right"]["late"] == "yes"
    assert rows["t01"]["late"] == "no"
    assert rows["s09_nothing"]["late"] == "unknown"
    # what a student writes into their own submission is shown as their claim, never used
    claim = rows["s25_claims_early"]
    assert claim["late"] == "yes" and claim["submitted_at"] == "2025-03-02T09:30:00+00:00"
    assert "2025-02-01" in claim["student_claim"] and "submitted_at.txt" in claim["student_claim"]
    assert rows["t03"]["late"] == "unknown" and "2025-03-01T12:00" in rows["t03"]["student_claim"]


def test_matching_report_says_what_was_used_and_ignored(graded):
    _, _, runs = graded
    text = (runs[0][0] / "matching.md").read_text()
    assert "`choose_path.py` (slug)" in text and "`hw/week4/p5.py` (number)" in text
    assert "`P01_KV_Cache_Bytes.py` (name)" in text and "`p01_kv_cache_bytes (1).py` (name)" in text
    assert "old/p04_choose_path.py: another file for problem 4" in text    # the stub lost to the answer
    assert "notes.py: no problem has this name" in text
    assert "grader/problems" not in text.split("## `s05_whole_repo`")[1].split("##")[0]
    assert "UNREADABLE" in text.split("## `s20_broken`")[1]
    assert "`practice/p04.ipynb` (notebook: number) -- ``NOT GRADED: no cell defines `attention_flops`" in text
    assert "symbolic link" in text and "byte limit" in text


def test_summary_counts_reasons_and_named_mistakes(graded):
    _, expected, runs = graded
    data = json.loads((runs[0][0] / "summary.json").read_text())
    by = {d["problem"]: d for d in data["problems"]}
    for n in PROBLEMS:
        want = sum(expected[(s, m)][0] == "passed" for s, m in expected if m == n)
        assert by[n]["status"]["passed"] == want
    assert ["non-causal pairs"] == [m[0] for m in by[4]["mistakes"]]
    assert "one layer" in [m[0] for m in by[1]["mistakes"]]
    assert "timeout" in [r[0] for r in by[1]["reasons"]]
    png = (runs[0][0] / "summary.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_per_student_results_are_exercism_v3(graded):
    _, _, runs = graded
    res = json.loads((runs[0][0] / "results" / "s07_named_slips.json").read_text())
    assert res["version"] == 3 and res["status"] == "fail" and res["seed"] == SEED
    assert [t["name"] for t in res["tests"]] == [f"p{n:02d} {_p(n).slug}" for n in PROBLEMS]
    assert all(t["status"] in ("pass", "fail", "error") for t in res["tests"])
    t4 = res["tests"][1]
    assert t4["status"] == "fail" and "Likely slip" in t4["message"]
    assert "{FILE}" not in json.dumps(res) and res["files"]["p04"] == "s07_named_slips/practice/p04_choose_path.py"
    assert res["score"] == 1 and res["max_score"] == 3


def test_an_interrupted_run_resumes_without_regrading(graded, tmp_path):
    subs, _, runs = graded
    out = tmp_path / "grades"
    import shutil
    shutil.copytree(runs[0][0], out)
    cache = next((out / ".cache").iterdir())
    records = sorted(cache.glob("*.json"))
    for f in records[:3]:       # as if the run had stopped before these three
        f.unlink()
    res = grade_class(subs, out, settings(), progress=False, log=lambda *a: None)
    gradebook.write(res, out)
    assert res.graded_now == 3 and res.attempts == len(records)
    for name in GRADED_FILES:
        assert (out / name).read_bytes() == (runs[0][0] / name).read_bytes(), name


def test_the_cache_is_keyed_by_seed_and_judge_version(tmp_path):
    from classroom.grade import cache_dir
    a, b = cache_dir(tmp_path, settings(SEED), "v" * 64), cache_dir(tmp_path, settings(SEED + 1), "v" * 64)
    c = cache_dir(tmp_path, settings(SEED), "w" * 64)
    assert len({a, b, c}) == 3


# --------------------------------------------------------------------------- matching, unit level

@pytest.mark.parametrize("name,rule", [
    ("p04_choose_path.py", "exact"), ("P04_Choose_Path.py", "name"), ("p04_choose_path (2).py", "name"),
    ("p4_choose_path.py", "name"), ("choose_path.py", "slug"), ("Choose_Path-final.py", "slug"),
    ("p4.py", "number"), ("problem_04.py", "number"), ("alice_p04_choose_path_v2.py", "contains"),
    ("p14.py", None), ("choose.py", None), ("p04_choose_path.pyc", None)])
def test_file_name_rules(name, rule):
    assert submissions.rule_for(name, _p(4)) == rule


def test_zip_entries_are_read_in_memory_and_never_extracted(tmp_path):
    z = tmp_path / "mallory.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../../escape/p04_choose_path.py", "x = 1\n")
        zf.writestr("/abs/p01_kv_cache_bytes.py", "y = 2\n")
    notes = []
    cands = submissions.read_zip(z, notes)
    assert [c.rel for c in cands] == ["abs/p01_kv_cache_bytes.py"]
    assert any("leaves its folder" in n for n in notes)
    assert not (tmp_path.parent / "escape").exists()


def test_the_seed_comes_from_the_option_a_file_the_environment_or_the_last_run(tmp_path, monkeypatch):
    from classroom.grade import SEED_ENV, resolve_seed
    monkeypatch.delenv(SEED_ENV, raising=False)
    secret = tmp_path / "secret.txt"
    secret.write_text("123456789\n")
    assert resolve_seed(5, secret, tmp_path) == (5, "--seed")
    assert resolve_seed(None, secret, tmp_path)[0] == 123456789
    monkeypatch.setenv(SEED_ENV, "0x10")
    assert resolve_seed(None, None, tmp_path) == (16, f"${SEED_ENV}")
    monkeypatch.delenv(SEED_ENV)
    (tmp_path / "seed.txt").write_text("77\n")
    assert resolve_seed(None, None, tmp_path)[0] == 77
    assert 0 <= resolve_seed(None, None, tmp_path / "new")[0] < 2**128
    secret.write_text("not a number")
    with pytest.raises(ValueError, match="integer seed"):
        resolve_seed(None, secret, tmp_path)


def test_hide_seed_keeps_the_seed_out_of_what_students_get(graded):
    import copy
    _, _, runs = graded
    res = copy.copy(runs[0][1])
    res.settings = copy.copy(res.settings)
    res.settings.hide_seed = True
    for g in res.students:
        text = json.dumps(gradebook.student_json(res, g))
        assert str(SEED) not in text, g.sub.student
    shown = json.dumps(gradebook.student_json(runs[0][1], next(g for g in res.students if g.sub.student == "s06_wrong")))
    assert str(SEED) in shown    # without the option the Reproduce lines name it
