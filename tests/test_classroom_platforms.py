"""GitHub Classroom's workflow and Gradescope's autograder, checked against the formats
those platforms document.

GitHub Classroom: the workflow must be the one generated from the specs, and follow the
inputs of classroom-resources/autograding-command-grader (action.yml: test-name,
setup-command, command, timeout in minutes, max-score) and of
autograding-grading-reporter (src/main.js reads env `<RUNNER ID upper-cased>_RESULTS`
for each id in `runners`).

Gradescope: https://gradescope-autograders.readthedocs.io/en/latest/specs/ -- a zip with
setup.sh and run_autograder at its root; run_autograder writes
/autograder/results/results.json with `tests`, each having name, score, max_score,
status (passed/failed), output and visibility (hidden, after_due_date, after_published,
visible). The built zip's run_autograder is run here on a fake /autograder tree."""
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from grader import runner
from classroom import platforms
from tests.sandbox_support import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
SPEC_INPUTS = {"test-name", "setup-command", "command", "timeout", "max-score"}


def test_workflow_follows_the_documented_action_inputs():
    wf = yaml.safe_load(platforms.WORKFLOW.read_text())
    assert set(wf["on"]) >= {"push"}
    assert wf["permissions"]["checks"] == "write"
    steps = wf["jobs"]["run-autograding-tests"]["steps"]
    graders = [s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-command-grader@")]
    problems = runner.discover()
    assert len(graders) == len(problems)
    ids = []
    for s, p in zip(graders, problems):
        assert set(s["with"]) <= SPEC_INPUTS and {"test-name", "command"} <= set(s["with"])
        assert s["with"]["command"] == f".venv/bin/python judge.py {p.number}"   # exit code 0 iff it passes
        assert int(s["with"]["max-score"]) >= 1 and 1 <= int(s["with"]["timeout"]) <= 360
        ids.append(s["id"])
    assert len(set(ids)) == len(ids)
    setup = [i for i, s in enumerate(steps) if s.get("run") == "bash setup.sh"]
    assert setup and setup[0] < steps.index(graders[0])
    reporter = steps[-1]
    assert reporter["uses"].startswith("classroom-resources/autograding-grading-reporter@")
    assert reporter["with"]["runners"].split(",") == ids
    for sid in ids:
        assert reporter["env"][f"{sid.upper()}_RESULTS"] == f"${{{{steps.{sid}.outputs.result}}}}"


def test_workflow_points_follow_the_option():
    wf = yaml.safe_load(platforms.workflow_text(points={12: 3}))
    steps = {s.get("id"): s for s in wf["jobs"]["run-autograding-tests"]["steps"]}
    assert steps["p12"]["with"]["max-score"] == 3 and steps["p01"]["with"]["max-score"] == 1


def test_release_can_carry_the_workflow(tmp_path, pristine_course):
    from classroom import release
    r = release.build(tmp_path, root=pristine_course, source="worktree", github_classroom=True)
    assert (r.folder / ".github/workflows/classroom.yml").read_text() == platforms.workflow_text()


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    out = tmp_path_factory.mktemp("gs")
    zip_path, seed = platforms.build_gradescope(out, seed=987654321, points={4: 2})
    return zip_path, seed


def test_gradescope_zip_has_the_two_scripts_at_its_root(autograder):
    zip_path, seed = autograder
    with zipfile.ZipFile(zip_path) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        config = json.loads(zf.read("config.json"))
    for name in ("setup.sh", "run_autograder"):
        assert name in infos
        assert (infos[name].external_attr >> 16) & stat.S_IXUSR, f"{name} must be executable"
    assert not any(n.startswith(("solutions/", "tests/")) for n in infos)
    assert "grader/runner.py" in infos and "classroom/platforms.py" in infos
    assert config["seed"] == seed and config["points"]["4"] == 2.0
    assert config["problems"] == [p.number for p in runner.discover()]


def test_gradescope_scripts_parse():
    for name in ("setup.sh", "run_autograder"):
        done = subprocess.run(["bash", "-n", str(platforms.GRADESCOPE_SOURCE / name)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_gradescope_run_writes_documented_results(autograder, tmp_path):
    require_sandbox()
    zip_path, seed = autograder
    root = tmp_path / "autograder"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    run = root / "source" / "run_autograder"
    run.chmod(0o755)
    sub = root / "submission"
    (sub / "practice").mkdir(parents=True)
    (sub / "practice" / "p01_kv_cache_bytes.py").write_bytes((ROOT / "solutions/p01_kv_cache_bytes.py").read_bytes())
    slip = (ROOT / "solutions/p04_choose_path.py").read_text().replace(
        "pairs = n_new * n_ctx - n_new * (n_new - 1) // 2", "pairs = n_new * n_ctx")
    (sub / "choose_path.py").write_text(slip)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    done = subprocess.run(["bash", str(run)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    res = json.loads((root / "results" / "results.json").read_text())
    assert platforms.validate_gradescope(res) == []
    tests = {t["name"]: t for t in res["tests"]}
    n = len(runner.discover())
    assert len(tests) == 2 * n
    for t in res["tests"]:
        assert {"name", "score", "max_score", "status", "output", "visibility"} <= set(t)
        hidden = "hidden included" in t["name"]
        assert t["visibility"] == ("after_published" if hidden else "visible")
        assert t["max_score"] == (0 if not hidden else (2.0 if t["name"].startswith("p04") else 1.0))
    assert tests["p01 kv_cache_bytes: all cases, hidden included"]["status"] == "passed"
    assert tests["p01 kv_cache_bytes: all cases, hidden included"]["score"] == 1.0
    p4 = tests["p04 choose_path: all cases, hidden included"]
    assert p4["status"] == "failed" and p4["score"] == 0 and "Likely slip" in p4["output"]
    assert tests["p04 choose_path: public cases"]["status"] == "failed"
    assert tests["p02 rope_scores: public cases"]["status"] == "failed"    # no file handed in
    assert res["score"] == 1.0
    assert str(seed) not in json.dumps(res), "the seed stays out of students' feedback"
    assert "choose_path.py" in res["output"]


def test_the_validator_rejects_what_gradescope_does_not_document():
    good = {"score": 1.0, "tests": [{"name": "a", "score": 1.0, "max_score": 1.0, "status": "passed",
                                     "output": "", "visibility": "visible"}]}
    assert platforms.validate_gradescope(good) == []
    bad = {"score": 2.0, "grade": 1, "tests": [{"name": "", "score": "1", "status": "ok",
                                                "visibility": "later", "output": 3}]}
    errs = platforms.validate_gradescope(bad)
    for word in ("grade", "name", "score", "status", "visibility", "output", "sum"):
        assert any(word in e for e in errs), (word, errs)
