"""The docs say what the tools do.

* The student bundle's README is README.md's student edition: every link, path, module
  and option it names is in the bundle, every judge command it shows parses with the
  bundle's judge, and it names nothing a student's copy lacks (pytest, --solutions,
  CONTRIBUTING.md, tests/, web/, pages.yml); README.md itself names only what the repository has.
* `release` says truly what it leaves out (with --github-classroom too).
* docs/teaching.md counts no problems by hand, and every problem it names exists, with
  the requirements the specs give it.
* `gradescope` refuses to invent a seed or to read one from inside --out, and writes the
  seed nowhere but into the autograder zip."""
import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import problems as layout
from classroom import __main__ as classroom
from classroom import guide, readme, release
from grader import cli, runner

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = runner.discover()


@pytest.fixture(scope="module")
def bundle_files():
    files, _, _ = release.collect(ROOT, "worktree")
    files["README.md"] = release.student_readme(files).encode()
    return files


@pytest.fixture(scope="module")
def student_text(bundle_files):
    return bundle_files["README.md"].decode()


def repo_files() -> dict:
    return {f: (ROOT / f).read_bytes() for f in release.repository_files(ROOT) if (ROOT / f).is_file()}


def test_the_student_readme_names_only_what_the_bundle_holds(bundle_files, student_text):
    refs = readme.references(student_text)
    kinds = {r.kind for r in refs}
    assert kinds == {"link", "path", "module", "flag"}, kinds   # the check sees every kind
    bad = [(r.line, r.value, why) for r in refs
           if (why := readme.missing(r, bundle_files, release.repository_files(ROOT)))]
    assert not bad, bad
    # what a student's copy lacks, by plain search (independent of the reference parser)
    for gone in ("-m pytest", "--solutions", "CONTRIBUTING", "tests/", "web/", "pages.yml", "solutions/",
                 "docs/", "--run-slow", "-m classroom", "For teachers", "<!--", "student-only"):
        assert gone not in student_text, gone
    assert "Student edition" in student_text and "python practice/judge.py" in student_text


def test_the_student_readme_judge_commands_parse_with_the_bundles_judge(student_text):
    judge_commands_parse(student_text)


def test_the_chinese_student_readme_names_what_the_bundle_holds_and_its_judge_commands_parse(bundle_files):
    """README.zh.md's student edition (the README of `release --lang zh`): the same checks."""
    text = release.student_readme(bundle_files, ROOT, "README.zh.md")
    bad = [(r.line, r.value, why) for r in readme.references(text)
           if (why := readme.missing(r, bundle_files, release.repository_files(ROOT)))]
    assert not bad, bad
    assert "学生版" in text and "<!--" not in text and "-m classroom" not in text
    judge_commands_parse(text)


def judge_commands_parse(student_text):
    commands = []
    for line in student_text.splitlines():
        for span in re.findall(r"`([^`]*judge\.py[^`]*)`", line) or ([line] if "judge.py" in line else []):
            m = re.search(r"(?:^|\s)(?:python3?|\.venv/bin/python)\s+(?:practice/)?judge\.py((?:\s+[^#&;`]*)?)", span)
            if m:
                commands.append(m.group(1).replace("…", "").replace(" N", " 4").split())
    assert len(commands) >= 5, commands
    parser = cli.build_parser("judge.py")
    for argv in commands:
        with contextlib.redirect_stderr(io.StringIO()) as err:
            try:
                parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"judge.py {' '.join(argv)}: {err.getvalue()}")


def test_the_repository_readme_names_only_what_the_repository_holds():
    files = repo_files()
    text = (ROOT / "README.md").read_text()
    bad = [(r.line, r.value, why) for r in readme.references(text) if (why := readme.missing(r, files, files))]
    assert not bad, bad


def test_the_checks_are_not_vacuous(bundle_files):
    files = dict(bundle_files)
    tops = release.repository_files(ROOT)
    for text, kind in [("run `python -m pytest`", "module"), ("see [the rules](CONTRIBUTING.md)", "link"),
                       ("`bash web/build.sh`", "path"), ("`python practice/judge.py --solutions`", "flag"),
                       ("`--run-slow`", "flag"), ("`python -m kernels.nope`", "module")]:
        refs = [r for r in readme.references(text) if r.kind == kind]
        assert refs and any(readme.missing(r, files, tops) for r in refs), text
    for text in ("`python practice/judge.py 4 --hint`", "`python -m kernels.compile_report`", "`--strict`",
                 "[kernels](kernels/README.md)", "`jupyter lab notebooks/`"):
        assert not [r for r in readme.references(text) if readme.missing(r, files, tops)], text


def test_readme_markers_must_pair_up():
    with pytest.raises(readme.ReadmeError, match="never closed"):
        readme.student_edition("# t\n<!-- repo-only -->\nx\n", {}, set())
    with pytest.raises(readme.ReadmeError, match="closes no"):
        readme.student_edition("# t\n/student-only -->\n", {}, set())
    text = "# t\n<!-- repo-only -->\nsecret\n<!-- /repo-only -->\n<!-- student-only\nshown\n/student-only -->\n"
    assert readme.student_edition(text, {}, set()) == "# t\nshown\n"


def _release_output(tmp_path, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = classroom.main(["release", "--out", str(tmp_path), "--from-worktree", *args])
    assert rc == 0
    return out.getvalue()


def test_release_says_truly_what_it_leaves_out(tmp_path):
    text = _release_output(tmp_path, "--github-classroom")
    line = next(ln for ln in text.splitlines() if "not included:" in ln)
    assert ".github/ (the bundle has its own .github/workflows/classroom.yml)" in line
    bundle = tmp_path / release.BUNDLE_NAME
    assert (bundle / ".github/workflows/classroom.yml").is_file()
    listed = re.sub(r" \([^)]*\)", "", line.split("not included: ", 1)[1])   # drop "(...)" notes
    named = [n.rstrip("/") for n in listed.split(", ")]
    assert {"solutions", "tests", "docs", "classroom", "web", "CONTRIBUTING.md"} <= set(named), named
    assert "grader/problems/*" in named and "grader" not in named   # the problems' folders, in part
    for name in named:
        if name == "grader/problems/*":   # each ships its spec and its mistakes' recorded answers
            homes = sorted((ROOT / "grader" / "problems").glob("p[0-9][0-9]_*"))
            assert homes and all(sorted(f.name for f in (bundle / "grader/problems" / h.name).iterdir())
                                 == sorted(layout.SHIPPED) for h in homes)
            continue
        assert (ROOT / name).exists(), name
        if name != ".github":
            assert not (bundle / name).exists(), name
    plain = _release_output(tmp_path)
    assert ".github/," in plain and "has its own" not in plain


# --------------------------------------------------------------------------- teaching.md

NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|" \
               "sixteen|seventeen|eighteen|nineteen|twenty"


def _hand_written(text: str) -> str:
    return re.sub(r"<!-- BEGIN GENERATED: (\w+) -->.*?<!-- END GENERATED: \1 -->", "", text, flags=re.S)


def _numbers(spec: str) -> set:
    out = set()
    for part in re.split(r"\s*(?:,|and)\s*", spec):
        m = re.match(r"^(\d+)\s*(?:-|–|to)\s*(\d+)$", part.strip())
        if m:
            out.update(range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.strip().isdigit():
            out.add(int(part))
    return out


NUM = r"\d+(?![\d,.]\d)"   # a number, not the start of 1,295 or 2.5
PROBLEM_REFS = re.compile(rf"\b[Pp]roblems?\s+({NUM}(?:(?:\s*(?:-|–|to)\s*|,\s+|\s+and\s+){NUM})*)|"
                          r"--problems\s+([\d,-]+)|--points\s+(\d+)=|judge\.py\s+(\d+)\b")


def problem_refs(text: str) -> set:
    out = set()
    for m in PROBLEM_REFS.finditer(text):
        out |= _numbers(next(g for g in m.groups() if g))
    return out


def test_teaching_guide_counts_no_problems_by_hand():
    text = _hand_written(guide.GUIDE.read_text())
    counts = re.findall(rf"\b(?:all\s+)?(?:\d+|{NUMBER_WORDS})\s+(?:practice\s+|graded\s+)?problems\b", text, re.I)
    assert not counts, f"teaching.md counts problems by hand: {counts} (there are {len(PROBLEMS)}, and more come)"
    assert not re.search(rf"\ball (?:\d+|{NUMBER_WORDS})\b", text, re.I)


def test_teaching_guide_names_only_problems_that_exist_as_the_specs_say():
    text = _hand_written(guide.GUIDE.read_text())
    numbers = {p.number for p in PROBLEMS}
    named = problem_refs(text)
    assert named, "the check finds the guide's references"
    assert named <= numbers, f"teaching.md names problems {sorted(named - numbers)}, which do not exist"
    for m in re.finditer(r"\bp(\d\d)_(\w+)\.py", text):
        p = runner.find(int(m.group(1)))
        assert p.filename == m.group(0), m.group(0)
    heavy = {p.number for p in PROBLEMS if p.needs_torch}
    light = numbers - heavy
    for sentence in re.split(r"(?<=[.;])\s+", text):
        refs = problem_refs(sentence)
        if not refs:
            continue
        if re.search(r"only numpy|numpy-only|need(s)? only numpy", sentence):
            assert refs == light, f"{sentence!r}: the numpy-only problems are {sorted(light)}"
        elif re.search(r"\b(torch|triton)\b", sentence) and "without" not in sentence:
            assert refs == heavy, f"{sentence!r}: the problems needing torch/triton are {sorted(heavy)}"


def test_the_teaching_checks_catch_the_old_text():
    old = ("Chapters 1 to 5 and problems 1 to 11 need only numpy and matplotlib. "
           "200 students and all 12 problems took 10 minutes.")
    light = {p.number for p in PROBLEMS if not p.needs_torch}
    assert problem_refs(old.split(". ")[0]) != light
    assert re.findall(rf"\b(?:all\s+)?(?:\d+|{NUMBER_WORDS})\s+problems\b", old)


# --------------------------------------------------------------------------- gradescope's seed

def _gradescope(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = classroom.main(["gradescope", *args])
    return rc, out.getvalue(), err.getvalue()


def test_gradescope_refuses_without_the_teachers_seed(tmp_path, monkeypatch):
    monkeypatch.delenv("MLA_CLASS_SEED", raising=False)
    rc, _, err = _gradescope("--out", str(tmp_path / "dist"))
    assert rc == 2 and "needs your secret seed" in err
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())
    inside = tmp_path / "dist" / "secret.txt"
    inside.parent.mkdir(exist_ok=True)
    inside.write_text("424242\n")
    rc, _, err = _gradescope("--out", str(tmp_path / "dist"), "--seed-file", str(inside))
    assert rc == 2 and "inside --out" in err
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["secret.txt"]


def test_gradescope_writes_the_seed_only_into_the_autograder(tmp_path, monkeypatch):
    monkeypatch.delenv("MLA_CLASS_SEED", raising=False)
    secret = tmp_path / "private" / "seed.txt"
    secret.parent.mkdir()
    secret.write_text("424242\n")
    rc, out, _ = _gradescope("--out", str(tmp_path / "dist"), "--seed-file", str(secret), "--without-torch")
    assert rc == 0, out
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == ["gradescope-autograder.zip"]
    with zipfile.ZipFile(tmp_path / "dist" / "gradescope-autograder.zip") as zf:
        assert json.loads(zf.read("config.json"))["seed"] == 424242
    assert "424242" not in out and f"--seed-file {secret}" in out
    monkeypatch.setenv("MLA_CLASS_SEED", "77")
    rc, _, _ = _gradescope("--out", str(tmp_path / "dist2"), "--without-torch")
    assert rc == 0


@pytest.mark.slow
def test_the_student_readme_commands_run_in_the_bundle(tmp_path, student_text):
    """Every judge command of the student README's command blocks runs in a built bundle
    (with the problem 4 for N; --watch, which never ends, is only parsed above): exit 0 or
    1 (graded, not passed), never 2 (a usage error) or a traceback."""
    r = release.build(tmp_path / "dist", source="worktree")
    lines = [ln.split(" #", 1)[0].strip() for ln in student_text.splitlines()
             if re.match(r"^\s*python3?\s+(practice/)?judge\.py", ln)]
    assert len(lines) >= 4
    for line in lines:
        argv = shlex.split(line.replace(" N", " 4"))
        if "--watch" in argv:
            continue
        done = subprocess.run([sys.executable, *argv[1:]], cwd=r.folder, capture_output=True, text=True,
                              timeout=600, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(r.folder),
                                                "MLA_JUDGE_NO_VENV": "1", "HOME": str(tmp_path)})
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (line, done.stdout[-1500:],
                                                                            done.stderr[-1500:])
        assert "problem 4" in done.stdout.lower() or "not started" in done.stdout, (line, done.stdout[-1500:])


def test_a_new_problem_fails_until_the_guide_and_the_workflow_are_regenerated(monkeypatch, capsys):
    """The two generated files a new problem changes: docs/teaching.md's sections (`python
    -m classroom guide`) and GitHub Classroom's workflow (`python -m classroom github`).
    With a new spec and neither command run, both checks fail and name the command."""
    import dataclasses
    real = runner.discover()
    assert classroom.main(["guide", "--check"]) == 0 and classroom.main(["github", "--check"]) == 0
    fake = dataclasses.replace(real[0], number=99, slug="fake_problem", title="A fake problem")
    monkeypatch.setattr(runner, "discover", lambda errors=None: [*real, fake])
    capsys.readouterr()
    assert classroom.main(["guide", "--check"]) == 1
    assert "OUT OF DATE" in capsys.readouterr().out and set(guide.stale()) >= {"plan", "problems"}
    assert classroom.main(["github", "--check"]) == 1
    assert "OUT OF DATE: run python -m classroom github" in capsys.readouterr().out
    text = guide.render(guide.GUIDE.read_text())
    assert "### Problem 99 · `fake_problem`" in text and "99 `fake_problem`" in text
