"""The student bundle: no model answers by any route, and it works from its zip.

One bundle is built per module (from the working tree, so the test sees the files as they
are now, with practice/ as the committed stubs whatever a learner wrote there: see
tests/pristine.py) and checked for: no solutions/, tests or git history; no function with a model
answer's body (AST comparison, up to names and formatting) beyond the documented
allowances; every stub unsolved; for every problem, an attempt that returns the course's
reference fails in the bundle's own judge; and `bash setup.sh && python practice/judge.py`
works on a fresh copy unzipped elsewhere (setup.sh runs for real, with the packages this
venv already has made visible to the new venv, so nothing is downloaded: see the test)."""
import ast
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import problems as layout, runner, slips
from classroom import leaks, release

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, pristine_course):
    out = tmp_path_factory.mktemp("dist")
    return release.build(out, root=pristine_course, source="worktree")


def test_bundle_has_no_solutions_tests_history_or_teacher_tools(bundle):
    names = release.zip_names(bundle.zip_path)
    top = f"{bundle.folder.name}/"
    assert all(n.startswith(top) for n in names), "the zip has one top folder"
    rels = [n[len(top):] for n in names]
    assert sorted(rels) == sorted(bundle.files)
    on_disk = sorted(p.relative_to(bundle.folder).as_posix() for p in bundle.folder.rglob("*") if p.is_file())
    assert on_disk == sorted(bundle.files)
    for rel in rels:
        parts = rel.split("/")
        assert parts[0] not in ("solutions", "tests", "docs", ".ci", "classroom"), rel
        assert ".git" not in parts and "__pycache__" not in parts, rel
        assert not rel.endswith((".pyc", ".pyo")), rel
    # what a learner needs is there
    for need in ("setup.sh", "requirements.txt", "pyproject.toml", "judge.py", "practice/judge.py",
                 "grader/runner.py", "mlacourse/flops.py", "kernels/mla_decode.py"):
        assert need in rels, need
    for p in runner.discover():
        assert f"practice/{p.filename}" in rels
        assert f"grader/problems/{p.stem}/{layout.SPEC}" in rels  # public and hidden case generators
        assert f"grader/problems/{p.stem}/{layout.RECORDED}" in rels  # the named mistakes' answers
    # of the problems' folders nothing else: no base, slip file, stub template or corpus attempt
    assert [r for r in rels if not layout.shipped(r)] == []
    chapters = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert chapters and all(f"notebooks/{c}" in rels for c in chapters)
    # no file of the bundle is a byte-for-byte copy of a model answer
    answers = {f.read_bytes() for f in (ROOT / "solutions").glob("*.py")}
    assert not any((bundle.folder / r).read_bytes() in answers for r in rels)


def test_no_function_in_the_bundle_has_a_model_answer_body(bundle):
    hits = leaks.find_leaks(ROOT / "solutions", bundle.folder)
    for model, hit in hits:
        assert release.allowance(model.name, hit.where), f"{hit.where} has the body of the model answer {model.where}"
    # every allowance is still needed (a stale allowance would hide a future leak)
    used = {(m.name, release.source_file(h.where)) for m, h in hits}
    assert set(release.ALLOWED) <= used


def test_the_leak_scan_catches_a_renamed_copy(tmp_path):
    """The comparison is not vacuous: a model answer with renamed variables, no docstring
    and other formatting is found; a different function is not."""
    src = (ROOT / "solutions" / "p10_split_kv_decode.py").read_text()
    renamed = src.replace("num_splits", "n_parts").replace("    ", "  ")
    (tmp_path / "student_notes.py").write_text('"""notes"""\n' + renamed)
    (tmp_path / "other.py").write_text("def split_kv_decode(q, k):\n    return q @ k.T\n")
    hits = leaks.find_leaks(ROOT / "solutions", tmp_path)
    assert hits and all(h.where.startswith("student_notes.py") for _, h in hits)


def test_what_a_stub_gives_is_no_leak(tmp_path):
    """Problem 12's launcher is in its stub (behind one NotImplementedError line), so every
    attempt -- a named mistake's file too -- holds the model answer's launcher: not a leak.
    The same body without the stub that gives it is one."""
    src = (ROOT / "solutions" / "p12_triton_inner_loop.py").read_text()
    launcher = next(n for n in ast.parse(src).body if getattr(n, "name", "") == "triton_inner_loop")
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "attempt.py").write_text(ast.get_source_segment(src, launcher) + "\n")
    hits = {m.name for m, _ in leaks.find_leaks(ROOT / "solutions", tmp_path)}
    assert hits == {"triton_inner_loop"}
    (tmp_path / "practice").mkdir()
    shutil.copy2(ROOT / "practice" / "p12_triton_inner_loop.py", tmp_path / "practice")
    assert leaks.find_leaks(ROOT / "solutions", tmp_path) == []


def test_a_solved_stub_stops_the_release(tmp_path, pristine_course):
    files, _, _ = release.collect(pristine_course, "worktree")
    files["practice/p04_choose_path.py"] = (ROOT / "solutions" / "p04_choose_path.py").read_bytes()
    bad = release.unsolved_stub_problems(files)
    assert any("p04_choose_path.py" in b and "NotImplementedError" in b for b in bad)
    assert release.unsolved_stub_problems(release.collect(pristine_course, "worktree")[0]) == []


def test_student_readme_has_no_teacher_section(bundle):
    text = (bundle.folder / "README.md").read_text()
    assert "Student edition" in text
    assert "For teachers" not in text and "-m classroom" not in text
    assert "model answers are in" not in text


@pytest.fixture(scope="module")
def zh_bundle(tmp_path_factory, pristine_course):
    return release.build(tmp_path_factory.mktemp("dist_zh"), root=pristine_course, source="worktree", lang="zh")


def test_the_chinese_bundle(zh_bundle, bundle):
    """`release --lang zh`: README.md is the Chinese student edition (no teacher's part, no
    editors' notes), README.en.md the English one, each switching to the other; the judge's
    default language file; both languages' chapters; the same files otherwise, so the same
    leak scan (run by the build, which refuses a leak) found the same allowed bodies."""
    from classroom import readme
    zh = (zh_bundle.folder / "README.md").read_text(encoding="utf-8")
    en = (zh_bundle.folder / "README.en.md").read_text(encoding="utf-8")
    assert "学生版" in zh and "习题" in zh and "Student edition" in en
    for text, teacher in ((zh, "教师须知"), (en, "For teachers")):
        for gone in (teacher, "-m classroom", "-m pytest", "--solutions", "solutions/", "<!--", "student-only",
                     "repo-only", "CONTRIBUTING", "tests/", "docs/"):
            assert gone not in text, gone
    assert "](README.en.md)" in zh.split("\n\n")[1] and "](README.md)" in en.split("\n\n")[1]
    files = {f: (zh_bundle.folder / f).read_bytes() for f in zh_bundle.files}
    bad = [r for r in readme.references(zh) if readme.missing(r, files, release.repository_files(ROOT))]
    assert not bad and "notebooks/zh/01_kv_cache.ipynb" in zh, bad
    assert (zh_bundle.folder / "practice" / ".judge_lang").read_text() == "zh_CN\n"
    assert not (bundle.folder / "practice" / ".judge_lang").exists()
    chapters = sorted(p.name for p in (ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))
    assert chapters and all(f"notebooks/zh/{c}" in zh_bundle.files for c in chapters)
    assert set(zh_bundle.files) - set(bundle.files) == {"README.en.md", "practice/.judge_lang"}
    assert set(bundle.files) - set(zh_bundle.files) == {"README.zh.md"}
    assert zh_bundle.folder.name == "mla-course-student-zh" and zh_bundle.allowed_hits == bundle.allowed_hits
    assert "README.zh.md" not in ", ".join(zh_bundle.left_out)
    # the English bundle carries the Chinese README's student edition too
    en_zh = (bundle.folder / "README.zh.md").read_text(encoding="utf-8")
    assert "学生版" in en_zh and "教师须知" not in en_zh and "](README.md)" in en_zh.split("\n\n")[1]


def test_release_zip_is_reproducible(bundle, tmp_path, pristine_course):
    again = release.build(tmp_path, root=pristine_course, source="worktree")
    assert again.zip_path.read_bytes() == bundle.zip_path.read_bytes()


# one route to the reference per problem, rotated so each route is tried on several (the
# bundle's path is written into the attempt: the judge's sandbox clears the environment)
ROUTES = [
    ("import", "from {mod} import PROBLEM as _P\n"),
    ("importlib", "import importlib\n_P = importlib.import_module({mod!r}).PROBLEM\n"),
    ("__import__", "_P = __import__({mod!r}, fromlist=['PROBLEM']).PROBLEM\n"),
    ("sys.path + import", "import sys, os\nsys.path.insert(0, {bundle!r})\n"
                          "from {mod} import PROBLEM as _P\n"),
    ("source file", "import importlib.util, os\n"
                    "_s = importlib.util.spec_from_file_location('x', os.path.join({bundle!r}, "
                    "{file!r}))\n_m = importlib.util.module_from_spec(_s)\n_s.loader.exec_module(_m)\n_P = _m.PROBLEM\n"),
    ("exec of the source", "import os\n_ns = {{}}\nexec(open(os.path.join({bundle!r}, {file!r})).read(), _ns)\n"
                           "_P = _ns['PROBLEM']\n"),
]

GRADE_ALL = r"""
import json, sys
sys.path.insert(0, '.')
from concurrent.futures import ThreadPoolExecutor
from grader import runner
jobs = json.loads(sys.argv[1])
def one(job):
    r = runner.grade(runner.find(job[0]), job[1], 11)
    return [job[0], str(r.status), r.reason or (r.first_failure().reason if r.first_failure() else "")]
with ThreadPoolExecutor(2) as pool:
    print(json.dumps(list(pool.map(one, jobs))))
"""


def test_reference_attempts_fail_in_the_bundle(bundle, tmp_path):
    """For every problem: an attempt whose functions return exactly the spec's reference
    (which the judge's own tests show passes every case) fails in the bundle's judge,
    whatever route it takes to the reference."""
    jobs, routes = [], {}
    for i, p in enumerate(runner.discover()):
        name, tpl = ROUTES[i % len(ROUTES)]
        mod = f"grader.problems.{p.filename[:-3]}"
        head = tpl.format(mod=mod, file=f"grader/problems/{p.filename}", bundle=str(bundle.folder))
        body = "".join(f"def {fn}(*args, **kwargs):\n    return _P.reference[{fn!r}](*args, **kwargs)\n\n"
                       for fn in p.functions)
        f = tmp_path / p.filename
        f.write_text(head + "\n" + body)
        jobs.append([p.number, str(f)])
        routes[p.number] = name
    env = dict(os.environ, BUNDLE=str(bundle.folder))
    out = subprocess.run([sys.executable, "-c", GRADE_ALL, json.dumps(jobs)], cwd=bundle.folder, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(results) == len(jobs) >= 12
    for number, status, reason in results:
        if status == "unavailable":
            pytest.fail(f"problem {number} could not be graded here (needs torch/triton)")
        assert status == "failed" and reason == "uses_reference", \
            f"problem {number} via {routes[number]}: {status} ({reason})"


@pytest.mark.slow
def test_setup_and_judge_work_from_the_zip(bundle, tmp_path):
    """Unzip on a fresh folder, run the bundle's own `bash setup.sh`, then
    `python practice/judge.py`. To stay fast and offline the test makes .venv itself
    first (setup.sh keeps an existing one), without pip or setuptools of its own, and
    a .pth file shows it this venv's packages, pip included: setup.sh then finds torch
    and every requirement installed, so its pip steps download nothing, and it really
    runs `pip install -e .` (no build isolation: this venv's setuptools) and registers
    the Jupyter kernel. What is not exercised: making the venv and downloading."""
    with zipfile.ZipFile(bundle.zip_path) as zf:
        zf.extractall(tmp_path)
    copy = tmp_path / bundle.folder.name
    for f in ("setup.sh", "judge.py", "practice/judge.py"):  # zipfile drops modes: restore
        (copy / f).chmod(0o755)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(copy / ".venv")], check=True, timeout=120)
    site = next((copy / ".venv" / "lib").glob("python*/site-packages"))
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "course_venv.pth").write_text("\n".join(ours) + "\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV")) and k != "MLA_JUDGE_NO_VENV"}
    env.update(PIP_NO_BUILD_ISOLATION="0", PIP_NO_INDEX="1")
    setup = subprocess.run(["bash", "setup.sh"], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-3000:]
    assert "setup: done" in setup.stdout
    # the editable install points at the copy, not at this repository
    where = subprocess.run([str(copy / ".venv/bin/python"), "-c", "import grader; print(grader.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip().startswith(str(copy)), where.stdout + where.stderr
    overview = subprocess.run([str(copy / ".venv/bin/python"), "practice/judge.py"], cwd=copy, env=env,
                              capture_output=True, text=True, timeout=300)
    assert overview.returncode == 0, overview.stdout[-2000:] + overview.stderr[-2000:]
    assert "not started" in overview.stdout and "passed 0" in overview.stdout
    shutil.copy2(ROOT / "solutions" / "p01_kv_cache_bytes.py", copy / "practice" / "p01_kv_cache_bytes.py")
    one = subprocess.run(["python3", "practice/judge.py", "1"], cwd=copy, env=env, capture_output=True,
                         text=True, timeout=120)   # the system python hands over to the copy's .venv
    assert one.returncode == 0 and "PASSED" in one.stdout, one.stdout[-2000:] + one.stderr[-2000:]


# ---- course code pasted as an attempt ------------------------------------------------------

GRADE_PASTED = r"""
import json, sys
sys.path.insert(0, '.')
from concurrent.futures import ThreadPoolExecutor
from grader import runner
jobs = json.loads(sys.argv[1])
def one(job):
    number, path, functions = job
    r = runner.grade(runner.find(number), path, 11)
    cases = {f: [0, 0] for f in functions}   # function -> [cases passed, cases]
    for o in r.outcomes:
        if o.case.function in cases:
            cases[o.case.function][0] += str(o.status) == "pass"
            cases[o.case.function][1] += 1
    first = r.first_failure()
    why = r.reason or (first.reason if first else "") or ""
    msg = r.message or (first.message if first else "") or ""
    return [str(r.status), why, " ".join(msg.split())[:140], cases, sum(o.case.hidden for o in r.outcomes)]
with ThreadPoolExecutor(2) as pool:
    print(json.dumps(list(pool.map(one, jobs))))
"""


def _grade_pasted(bundle_folder: Path, attempts, tmp_path: Path) -> list:
    jobs = []
    for i, a in enumerate(attempts):
        f = tmp_path / f"attempt{i:02d}" / runner.find(a.problem).filename
        f.parent.mkdir(parents=True)
        f.write_text(a.source)
        jobs.append([a.problem, str(f), list(a.functions)])
    out = subprocess.run([sys.executable, "-c", GRADE_PASTED, json.dumps(jobs)], cwd=bundle_folder,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _spec_functions_pasted(bundle: Path, problems) -> list:
    """Each top-level function of grader/problems/ -- spec modules and their helpers (the
    named mistakes ship as recorded answers, not code: any .py there would be pasted
    too) -- that takes every argument a problem's function requires, pasted under
    that function's name: a simulator of slips at its default settings, or a helper of one
    problem that solves another, is a complete answer and must not ship as one. (A spec's
    reference is among leaks.pasted_attempts.)"""
    import inspect
    out = []
    for path in sorted((bundle / "grader" / "problems").rglob("*.py")):
        rel = path.relative_to(bundle).as_posix()
        tree = ast.parse(path.read_text())
        for p in problems:
            for fn in p.functions:
                params = inspect.signature(p.reference[fn]).parameters.values()
                need = {q.name for q in params if q.default is inspect.Parameter.empty}
                for node in tree.body:
                    if not isinstance(node, ast.FunctionDef) or node.name.startswith("reference"):
                        continue
                    a = node.args
                    if need <= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}:
                        item = leaks.Pasted(p.number, {fn: node.name}, rel, "a function taking its arguments")
                        item.source, item.refused = leaks._paste(bundle, rel, p, item.functions)
                        out.append(item)
    return out


def _passes(result) -> list[str]:
    """The functions of an attempt whose every case passed."""
    return [f for f, (ok, n) in result[3].items() if n and ok == n]


def test_no_course_code_pasted_as_an_attempt_passes(bundle, tmp_path):
    """No problem's answer ships as code: for every problem, each function of the bundle
    that is the spec's reference (an adapter in grader/problems, or the course function
    itself) or that carries one of the problem's function names (in mlacourse/, kernels/,
    grader/ or a chapter's cells) is pasted into a practice file the way a learner would
    -- its source and what it needs from its own file, relative imports made absolute,
    under the problem's name (leaks.pasted_attempts) -- and graded by the bundle's judge:
    none may pass all of its cases; so is every function of a spec module that takes the
    arguments of a problem's function (a simulator of slips at its default settings is an
    answer). The list comes from the specs, so a new problem is covered by itself.
    (release.ALLOWED names the one function that may pass its own cases: chapter 4's
    two-line choose_path, beside a wrong attention_flops.) Two controls show the check can
    fail: the model answer of problem 14 planted as course code, and planted in its spec
    under another name, are found and pass."""
    problems = runner.discover()
    # nothing exempt: of the problems' folders only the specs ship (the named mistakes as answers)
    assert sorted(p.relative_to(bundle.folder).as_posix() for p in (bundle.folder / "grader" / "problems").rglob("*.py")) \
        == sorted(["grader/problems/__init__.py"] + [f"grader/problems/{p.stem}/{layout.SPEC}" for p in problems])
    attempts = leaks.pasted_attempts(bundle.folder, problems) + _spec_functions_pasted(bundle.folder, problems)
    refused = [f"{a.label}: {a.refused}" for a in attempts if a.refused]
    assert not refused, "cannot paste (look at these by hand):\n  " + "\n  ".join(refused)
    refs = {a.problem for a in attempts if a.why == "the spec's reference"}
    assert refs == {p.number for p in problems}, "every problem's reference is among the attempts"

    control = tmp_path / "control"   # a course file that is a model answer under its own name
    (control / "mlacourse").mkdir(parents=True)
    shutil.copy2(ROOT / "solutions" / "p14_schedule_step.py", control / "mlacourse" / "planner.py")
    planted = [a for a in leaks.pasted_attempts(control, [runner.find(14)]) if not a.refused]
    assert [a.where for a in planted] == ["mlacourse/planner.py"]
    # and a spec helper that is a model answer under another name (a simulator at its defaults)
    (control / "grader" / "problems" / "p14_schedule_step").mkdir(parents=True)
    (control / "grader" / "problems" / "p14_schedule_step" / layout.SPEC).write_text(
        (ROOT / "solutions" / "p14_schedule_step.py").read_text().replace("def schedule_step(", "def _plan("))
    helper = [a for a in _spec_functions_pasted(control, [runner.find(14)]) if not a.refused]
    assert [(a.where, a.functions) for a in helper] == [(f"grader/problems/p14_schedule_step/{layout.SPEC}",
                                                          {"schedule_step": "_plan"})]
    planted += helper

    results = _grade_pasted(bundle.folder, attempts + planted, tmp_path)
    assert len(results) == len(attempts) + len(planted)
    for r in results[-2:]:
        assert _passes(r) == ["schedule_step"], f"the controls should pass: {r}"
    report, passing = [], []
    for a, r in zip(attempts, results):
        if r[0] == "unavailable":
            pytest.fail(f"problem {a.problem} could not be graded here (needs torch/triton)")
        report.append(f"{a.label}: {r[0]} ({r[1] or 'wrong answers'}: {r[2]})")
        allowed = [f for f in _passes(r) if (a.functions[f], release.source_file(a.where)) in release.ALLOWED]
        if len(allowed) < len(_passes(r)):
            passing.append(f"{a.label}: {', '.join(_passes(r))} passed every case")
        if allowed:
            report[-1] += f"; {', '.join(allowed)} passes its own cases (allowed: release.ALLOWED)"
    assert not passing, "course code that is a drop-in answer:\n  " + "\n  ".join(passing) + \
        "\nall verdicts:\n  " + "\n  ".join(report)


@pytest.mark.slow
def test_the_bundle_grades_every_problem(bundle, tmp_path):
    """The references moved behind adapters still grade: in the bundle's own judge every
    model answer passes its public and hidden cases (seed 11)."""
    problems = runner.discover()
    answers = [leaks.Pasted(p.number, {f: f for f in p.functions}, f"solutions/{p.filename}", "model answer",
                            source=(ROOT / "solutions" / p.filename).read_text()) for p in problems]
    results = _grade_pasted(bundle.folder, answers, tmp_path)
    for p, (status, why, msg, cases, hidden) in zip(problems, results):
        assert status == "passed" and hidden > 0, f"problem {p.number}: {status} ({why}: {msg}), {hidden} hidden cases"


def test_what_the_guide_calls_open_is_in_the_bundle(bundle):
    """docs/teaching.md's "open" table (guide.open_problems) names, per problem, the course
    code the judge's reference runs, and says a release ships it: every function it names
    is defined at top level (or as a method of a class defined there) in the bundle's file,
    and the table has a row for every problem."""
    from classroom import guide
    problems = runner.discover()
    for p in problems:
        runs = [q for fn in p.functions for q in leaks.course_code_run(p.reference[fn])]
        assert runs, f"problem {p.number}: no course code found in its reference"
        for q in runs:   # "mlacourse.engine.scheduler.Scheduler.plan": the longest prefix that is a file
            parts = q.split(".")
            cut = next((c for c in range(len(parts) - 1, 0, -1)
                        if (bundle.folder / ("/".join(parts[:c]) + ".py")).is_file()), None)
            assert cut, f"problem {p.number}: no file of the bundle holds {q}"
            tree = ast.parse((bundle.folder / ("/".join(parts[:cut]) + ".py")).read_text())
            top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            head, *rest = parts[cut:]
            assert head in top, f"problem {p.number}: {q} is not in the bundle"
            if rest:
                assert rest[0] in {n.name for n in top[head].body if isinstance(n, ast.FunctionDef)}, q
    table = guide.open_problems()
    for p in problems:
        assert f"\n| {p.number} `{p.slug}` | " in table, p.number


# ---- no file one line away from an answer ---------------------------------------------------

SCREEN = r"""
import copy, json, signal, sys
sys.path.insert(0, '.')
import numpy as np
from grader import child, runner
COURSE = ("mlacourse", "grader", "kernels", "solutions", "classroom")


class Slow(Exception):
    pass


def alarm(*_):
    raise Slow()


signal.signal(signal.SIGALRM, alarm)
cases = {}


def public(p):
    if p.number not in cases:
        cases[p.number] = [c for c in p.make_cases(0) if not c.hidden]
    return cases[p.number]


def imports_course(tree, p):
    import ast
    for node in ast.walk(tree):
        mods = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(m.split(".")[0] in COURSE and m not in p.may_import for m in mods):
            return True
    return False


def passes_public(number, source):
    # every public case of each of the problem's functions the source defines
    import ast
    p = runner.find(number)
    try:
        tree = ast.parse(source)
    except Exception:
        return False
    if imports_course(tree, p):   # the judge refuses it (uses_reference)
        return False
    ns = {"__name__": "attempt"}
    try:
        signal.alarm(10)
        exec(compile(tree, "attempt.py", "exec"), ns)
        fns = {f: ns[f] for f in p.functions if callable(ns.get(f))}
        if not fns:
            return False
        for c in public(p):
            if c.function not in fns:
                continue
            signal.alarm(int(max(2, (c.timeout_s or p.timeout_s) * 4)))
            with np.errstate(all="ignore"):
                got = fns[c.function](**copy.deepcopy(c.args))
            got = child.decode(json.loads(json.dumps(child.encode(got))))
            if not p.check(c, got).passed:
                return False
        return True
    except BaseException:
        return False
    finally:
        signal.alarm(0)


jobs = json.load(open(sys.argv[1]))
print(json.dumps([i for i, (n, src) in enumerate(jobs) if passes_public(n, src)]))
"""


def one_line_variants(source: str) -> list[tuple[str, str]]:
    """(what was done, the new source): the source as it is, each line deleted, each line
    marked `# slip` deleted, and each such line's comment-free code kept alone."""
    lines = source.split("\n")
    out = [("as it is", source)]
    for i, line in enumerate(lines):
        if line.strip():
            out.append((f"line {i + 1} deleted", "\n".join(lines[:i] + lines[i + 1:])))
    return out


def _candidates(folder: Path, problems) -> list:
    """(problem, where, source): every .py file of ``folder`` that defines one of a
    problem's functions at top level, and everything leaks.pasted_attempts and
    _spec_functions_pasted paste for the problem (course functions with its names, its
    reference, functions taking its arguments) -- the mistakes' folder not exempted."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        out += [(p.number, rel, path.read_text(encoding="utf-8")) for p in problems if set(p.functions) & top]
    pasted = leaks.pasted_attempts(folder, problems) + _spec_functions_pasted(folder, problems)
    out += [(a.problem, f"{a.where} ({a.why}: {a.functions})", a.source) for a in pasted if not a.refused]
    return out


def _one_line_answers(folder: Path, problems, tmp_path: Path, judge_folder: Path) -> tuple[list, int]:
    """([(problem, where, edit, the functions that pass)] -- a variant one of whose
    functions passes every case of that function in the judge in ``judge_folder`` -- and
    the number of variants tried)."""
    jobs, labels, seen = [], [], set()
    for number, where, source in _candidates(folder, problems):
        for edit, text in one_line_variants(source):
            if (number, text) in seen:
                continue
            seen.add((number, text))
            jobs.append([number, text])
            labels.append((number, where, edit))
    tmp_path.mkdir(parents=True, exist_ok=True)
    job_file = tmp_path / "screen.json"
    job_file.write_text(json.dumps(jobs))
    screened = subprocess.run([sys.executable, "-c", SCREEN, str(job_file)], cwd=judge_folder,
                              capture_output=True, text=True, timeout=1800)
    assert screened.returncode == 0, screened.stderr[-3000:]
    survivors = json.loads(screened.stdout.strip().splitlines()[-1])
    capture_note(f"{len(jobs)} variants tried in {judge_folder.name}: {len(survivors)} pass the public "
                 f"cases ({sorted({labels[i][1] for i in survivors})[:6]}), graded with the hidden ones")
    if not survivors:
        return [], len(jobs)
    attempts = [leaks.Pasted(jobs[i][0], {f: f for f in runner.find(jobs[i][0]).functions}, labels[i][1],
                             labels[i][2], source=jobs[i][1]) for i in survivors]
    results = _grade_pasted(judge_folder, attempts, tmp_path / "graded")
    passing = [(*labels[i], _passes(r)) for i, r in zip(survivors, results) if _passes(r)]
    return passing, len(jobs)


@pytest.mark.slow
def test_no_bundled_file_is_one_line_from_an_answer(bundle, tmp_path):
    """No .py file of the bundle passes any problem after deleting one of its lines (or as
    it is): every file that defines a problem's functions, and every course function the
    pasting machinery turns into an attempt, is tried with each line deleted -- first on
    the public cases in one process (a screen), then, what passes them, through the
    bundle's judge with its hidden cases. No named mistake ships (their recorded answers
    instead: each problem's folder holds its spec and mistakes.json) and no bundled file
    holds a line marked `# slip`. The control: the repository's named mistakes of problem
    4, expanded, searched the same way, give passing answers (deleting the slip line of
    'd_latent fixed at 512')."""
    problems = [p for p in runner.discover()]
    for p in problems:
        home = bundle.folder / "grader" / "problems" / p.stem
        assert sorted(f.name for f in home.iterdir()) == sorted(layout.SHIPPED), f"{p.stem} ships more"
    marked = [p.relative_to(bundle.folder).as_posix() for p in bundle.folder.rglob("*.py") if "# slip" in p.read_text()]
    assert marked == [], marked
    passing, tried = _one_line_answers(bundle.folder, problems, tmp_path / "bundle", bundle.folder)
    capture_note(f"{tried} one-line variants of the bundle's files tried, {len(passing)} pass")
    assert passing == [], "bundled files one line away from an answer:\n  " + "\n  ".join(
        f"problem {n}: {where}, {edit}: {', '.join(fns)} pass every case" for n, where, edit, fns in passing)

    control = tmp_path / "control"   # the repository's named mistakes of problem 4, as a release had them
    slips.materialise(ROOT / "grader" / "problems" / "p04_choose_path" / layout.MISTAKES, control / "mistakes")
    found, _ = _one_line_answers(control, [runner.find(4)], tmp_path / "control_run", bundle.folder)
    assert any(where.endswith("d_latent_fixed_at_512.py") and edit == "line 8 deleted"
               for _, where, edit, _ in found), found


def capture_note(text: str) -> None:
    print(f"\n[release] {text}")


GRADE_MISTAKES = r"""
import json, sys
sys.path.insert(0, '.')
from concurrent.futures import ThreadPoolExecutor
from grader import runner
jobs = json.loads(sys.argv[1])
def one(job):
    number, path = job
    r = runner.grade(runner.find(number), path, 11)
    return sorted({o.mistake for o in r.outcomes if o.mistake})
with ThreadPoolExecutor(2) as pool:
    print(json.dumps(list(pool.map(one, jobs))))
"""


@pytest.mark.slow
def test_the_student_edition_names_the_mistakes_its_public_cases_show(bundle, tmp_path):
    """Each named mistake's file of the repository, handed in as an attempt to the bundle's
    judge (which has the recorded answers, not the files): a mistake that shows on a public
    case (the file's answer fails one) and that no other mistake of its function matches on
    every public case is named, with its own message; any other is not named at all -- and
    no attempt is ever given another mistake's name. (Problem 12's mistakes are the spec's
    models in both editions: left out here.)"""
    from grader.runner import _passes, _wrong_answer, _RAISED
    from grader.spec import same_answer

    def agree(a, b, match):
        if a is _RAISED or b is _RAISED:
            return a is b
        try:
            return bool((match or same_answer)(a, b))
        except Exception:
            return False
    jobs, expect = [], []
    for p in runner.discover():
        if p.number == 12:
            continue
        public = [c for c in p.make_cases(0) if not c.hidden]
        answers = {m.name: [_wrong_answer(m, c) for c in public if c.function == m.function] for m in p.mistakes}
        for m in p.mistakes:
            mine = [c for c in public if c.function == m.function]
            shows = any(w is _RAISED or not _passes(p, c, w) for c, w in zip(mine, answers[m.name]))
            twin = any(o is not m and o.function == m.function and all(
                agree(a, b, m.match) for a, b in zip(answers[m.name], answers[o.name])) for o in p.mistakes)
            shows = shows and not twin
            f = tmp_path / f"p{p.number:02d}_{m.file_name[:-3]}" / p.filename
            f.parent.mkdir()
            f.write_text(m.source)
            jobs.append([p.number, str(f)])
            expect.append((p.number, m.name, m.message, shows))
    out = subprocess.run([sys.executable, "-c", GRADE_MISTAKES, json.dumps(jobs)], cwd=bundle.folder,
                         capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    named = json.loads(out.stdout.strip().splitlines()[-1])
    wrong = [(n, name, got) for (n, name, msg, _), got in zip(expect, named) if set(got) - {msg}]
    assert wrong == [], f"named as another mistake: {wrong}"
    missed = [(n, name) for (n, name, msg, shows), got in zip(expect, named) if shows and got != [msg]]
    assert missed == [], f"shows on a public case, not named by the student edition: {missed}"
    unnamed = [(n, name) for (n, name, msg, shows), got in zip(expect, named) if not shows]
    assert all(got == [] for (_, _, _, shows), got in zip(expect, named) if not shows)
    capture_note(f"the student edition names {sum(e[3] for e in expect)} of {len(expect)} named mistakes "
                 f"(problem 12 aside); these show only on hidden cases, or no public case tells them "
                 f"from another: {unnamed}")


def test_the_sites_wheel_has_recorded_mistakes_not_their_files(tmp_path):
    """The browser site's course wheel (web/build.py) is a student edition too: no named
    mistake's file, every problem's recorded answers, and the wheel's judge loads them."""
    sys.path.insert(0, str(ROOT / "web"))
    try:
        import build
    finally:
        sys.path.remove(str(ROOT / "web"))
    wheel = build.course_wheel(tmp_path / "wheel")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        z.extractall(tmp_path / "site")
    homes = [n for n in names if n.startswith("grader/problems/p")]
    assert sorted(homes) == sorted(f"grader/problems/{p.stem}/{f}" for p in runner.discover() for f in layout.SHIPPED)
    probe = subprocess.run([sys.executable, "-c", "from grader import runner; p = runner.find(4); "
                            "print(len(p.mistakes), type(p.mistakes[0].fn).__name__)"],
                           cwd=tmp_path / "site", capture_output=True, text=True, timeout=120)
    assert probe.stdout.split() == [str(len(runner.find(4).mistakes)), "RecordedAnswers"], probe.stderr[-2000:]
