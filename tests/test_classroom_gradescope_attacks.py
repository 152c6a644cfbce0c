"""Gradescope's autograder under attack, run as Gradescope runs it: the built zip's
run_autograder on a folder laid out like /autograder (AUTOGRADER_ROOT). A submission
with one honest answer (problem 1) and one attack (problem 4) that reads the seed from
source/config.json (through dir_fd, past the Python guard), walks up from its own working
folder to the harness's private folder and lists it and reads the verdict records it
would hold there (problem 1's record is written before problem 4 runs), and raises what
it found encoded (the exception's message is the student's feedback) together with text
that acts (ANSI, <img>, links, bidi, formulas, NUL, CR); it rewrites the harness, and
leaves setsid daemons that rewrite results.json to full marks after the run.

Asserted, in the sandbox and in the fallback (the attempt as a separate user): the score
is the honest one, results.json does not change after run_autograder returns, the seed
is in it in no encoding (decimal, hex, each problem's stream), no text in it acts, the
harness is byte-identical, and no process of the attempt is left; and, grading in this
process, the harness's records are files of mode 0600 in a folder of mode 0700 that hold
the seed in no form. The sandbox run needs bubblewrap (skipped without it, a failure in
CI); the separate-user run needs root and an interpreter other users may run."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from grader import sandbox
from classroom import platforms
from tests.hostile_class import HOSTILE_TEXT, MARK, inert_problems
from tests.sandbox_support import require_sandbox
from tests.test_classroom_hostile import live_processes, seed_forms, tree_digest

ROOT = Path(__file__).resolve().parent.parent
SEED = 0x2B7E151628AED2A6ABF7158809CF4F3C   # 128 bits
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")]

ATTACK = r'''
import base64, os, sys
ROOT = __ROOT__
MARK = __MARK__


NOTES = []


def say(tag, data):
    print(tag, str(data)[:200], flush=True)
    NOTES.append("%s %s" % (tag, str(data)[:160]))


LEAKS = []


def leak(text):
    import re
    for d in sorted(set(re.findall(r"\d{6,}", str(text)))):
        LEAKS.append(" ".join([d[::-1], " ".join(d), base64.b64encode(d.encode()).decode(), d.encode().hex()]))
        say("LEAK", LEAKS[-1])


for path in (ROOT + "/source/config.json", ROOT + "/source/gradescope-seed.txt"):
    try:   # through a descriptor of "/": the judge's Python-level guard does not see it
        fd = os.open(path.lstrip("/"), os.O_RDONLY, dir_fd=os.open("/", os.O_RDONLY))
        leak(os.read(fd, 100000))
    except OSError as e:
        say("dir_fd refused", e)
# the harness's private folder, found from this attempt's own working folder (its scratch
# folder lies in the workers' TMPDIR there): list it, read the records it would hold
here = os.getcwd()
for up in range(1, 5):
    base = os.path.dirname(here) if up == 1 else os.path.dirname(base)
    if base in ("/", "/tmp"):   # the machine's own folders: listable by design, and not the harness's
        continue
    try:
        say("listed", (base, os.listdir(base)))
        leak(os.listdir(base))
    except OSError as e:
        say("list refused", (base, e))
    for rel in ("records/p01.json", "p01.json", "records", "attempts"):
        try:
            with open(os.path.join(base, rel), "rb") as f:
                leak(f.read(1 << 20))
            say("READ", os.path.join(base, rel))
        except OSError as e:
            say("read refused", (rel, e))
for victim in (ROOT + "/source/grader/runner.py", ROOT + "/results/results.json"):
    try:
        fd = os.open(victim.lstrip("/"), os.O_WRONLY | os.O_TRUNC, dir_fd=os.open("/", os.O_RDONLY))
        os.write(fd, b"# MLAHOSTILE\n")
        say("WROTE", victim)
    except OSError as e:
        say("write refused", e)
full = json.dumps({"score": 99.0, "tests": []}) if False else '{"score": 99.0, "tests": []}'
script = "sleep 3; mkdir -p %s/results; echo '%s' > %s/results/results.json; sleep 600" % (ROOT, full, ROOT)
import _posixsubprocess
r, w = os.pipe()
try:
    _posixsubprocess.fork_exec(["/bin/sh", "-c", script, MARK], [b"/bin/sh"], True, (), None, None,
                               -1, -1, -1, -1, -1, -1, r, w, True, True, -1, None, None, -1, -1, None, False)
except Exception as e:
    say("fork_exec", e)


ACTS = __HOSTILE_TEXT__
print(" ".join(ACTS), flush=True)


def choose_path(*a, **k):
    # the exception's message is what the student's feedback shows
    raise ValueError(("LE" "AK " + " | ".join(LEAKS) + " " if LEAKS else "") + " ".join(ACTS)
                     + " ## " + " ## ".join(NOTES))


attention_flops = choose_path
'''


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    out = tmp_path_factory.mktemp("gs")
    zip_path, _ = platforms.build_gradescope(out, seed=SEED)
    return zip_path


def lay_out(zip_path: Path, root: Path) -> None:
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    sub = root / "submission" / "practice"
    sub.mkdir(parents=True)
    (sub / "p01_kv_cache_bytes.py").write_bytes((ROOT / "solutions/p01_kv_cache_bytes.py").read_bytes())
    attack = ATTACK.replace("__ROOT__", repr(str(root))).replace("__MARK__", repr(MARK)).replace(
        "__HOSTILE_TEXT__", repr(HOSTILE_TEXT))
    (sub / "p04_choose_path.py").write_text("import json\n" + attack)


def harness_digest(root: Path) -> dict:
    """The harness's files (its own bytecode caches, written by the harness, left out)."""
    return {k: v for k, v in tree_digest(root / "source").items() if "__pycache__" not in k}


def run_and_check(root: Path, env: dict):
    before = set(live_processes())
    harness = harness_digest(root)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = root / "results" / "results.json"
    first = results.read_bytes()
    time.sleep(5)   # the daemon meant to strike 3 s after the run
    try:
        left = {p: c[:120] for p, (c, _) in live_processes().items() if p not in before and MARK.encode() in c}
        assert left == {}, f"processes of the attempt outlived the run: {left}"
        assert results.read_bytes() == first, "results.json changed after run_autograder returned"
        res = json.loads(first)
        assert platforms.validate_gradescope(res) == []
        assert res["score"] == 1.0, res["score"]
        tests = {t["name"]: t for t in res["tests"]}
        assert tests["p04 choose_path: all cases, hidden included"]["score"] == 0
        text = json.dumps(res) + done.stdout + done.stderr
        hits = [k for k, v in seed_forms(SEED, range(1, 19)).items() if v in text]
        assert not hits, f"the seed reached the results in these encodings: {hits}"
        assert inert_problems(root / "results") == []
        p04 = next(t for t in res["tests"] if t["name"].startswith("p04") and "hidden" in t["name"])
        assert "onerror" in p04["output"] and "\\x1b[31m" in p04["output"], p04["output"][-800:]
        assert harness_digest(root) == harness, "the attempt changed the harness"
    finally:
        for p, (c, _) in live_processes().items():
            if p not in before and MARK.encode() in c:
                os.kill(p, 9)
    return res


def test_the_autograder_in_the_sandbox_holds(autograder, tmp_path):
    require_sandbox()
    root = tmp_path / "autograder"
    lay_out(autograder, root)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable,
               AUTOGRADER_SANDBOX="jail")
    res = run_and_check(root, env)
    p4 = next(t for t in res["tests"] if t["name"].startswith("p04") and "hidden" in t["name"])
    assert "LEAK " not in p4["output"]   # nothing found: the attack says LEAK only with a find


def _interpreter_for_others() -> str | None:
    """A Python interpreter of this version that another user can run, in a throwaway venv
    that sees this venv's packages (pyenv's interpreter under /root is closed to others)."""
    base = os.path.realpath(sys.executable)

    def open_to_others(path):
        p = Path(path)
        return all(os.stat(q).st_mode & 0o001 for q in [p, *p.parents])
    if open_to_others(base):
        return base
    mine = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(mine, path="/usr/bin:/usr/local/bin")
    return system if system and open_to_others(os.path.realpath(system)) else None


def _free_uid() -> int:
    import pwd
    used = {e.pw_uid for e in pwd.getpwall()}
    for uid in range(47000, 48000):
        if uid not in used and not sandbox.pids_of_user(uid):
            return uid
    raise RuntimeError("no free uid")


def test_the_autograder_as_a_separate_user_holds(autograder, tmp_path):
    """The fallback where the container forbids namespaces: a uid of its own (as setup.sh's
    mla-attempt), the harness and the results closed to it, all its processes killed."""
    if os.geteuid() != 0:
        pytest.skip("the separate-user fallback runs as root (as Gradescope does)")
    interp = _interpreter_for_others()
    if interp is None:
        pytest.skip("no Python interpreter here that another user may run")
    sites = [p for p in sys.path if os.path.basename(p) == "site-packages" and os.path.isdir(p)]
    if not all(os.stat(s).st_mode & 0o005 == 0o005 for s in sites):
        pytest.skip("this venv's packages are closed to other users")
    venv = tmp_path / "venv"
    subprocess.run([interp, "-m", "venv", "--without-pip", str(venv)], check=True)
    (next((venv / "lib").glob("python*")) / "site-packages" / "course.pth").write_text("\n".join(sites) + "\n")
    os.chmod(tmp_path, 0o755)
    root = tmp_path / "autograder"
    lay_out(autograder, root)
    uid = _free_uid()
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=str(venv / "bin" / "python"),
               AUTOGRADER_SANDBOX="user", AUTOGRADER_ATTEMPT_UID=str(uid))
    res = run_and_check(root, env)
    assert not sandbox.pids_of_user(uid)
    assert oct(os.stat(root / "source").st_mode & 0o777) == "0o700"
    p4 = next(t for t in res["tests"] if t["name"].startswith("p04") and "hidden" in t["name"])
    assert "LEAK " not in p4["output"]   # nothing found: the attack says LEAK only with a find


def test_the_harness_keeps_its_records_private_and_seedless(autograder, tmp_path, monkeypatch):
    """gradescope_run in this process, its private folder kept for a look: the records are
    0600 files in a 0700 folder, the staged attempts and the workers' TMPDIR in 0711
    folders of a 0711 base (reachable by exact path, not listable), and no record holds
    the seed in any form (decimal, hex, a problem's stream)."""
    require_sandbox()
    import shutil as sh
    root = tmp_path / "autograder"
    lay_out(autograder, root)
    kept = []
    real_rmtree = sh.rmtree

    def keep(path, *a, **k):
        if "mla-gradescope-" in str(path):
            kept.append(Path(path))
            return None
        return real_rmtree(path, *a, **k)
    monkeypatch.setattr(sh, "rmtree", keep)
    monkeypatch.setattr(platforms, "__file__", str(root / "source" / "classroom" / "platforms.py"))
    monkeypatch.setenv("AUTOGRADER_SANDBOX", "jail")
    try:
        platforms.gradescope_run(root)
    finally:
        monkeypatch.undo()
    assert len(kept) == 1
    base = kept[0]
    try:
        mode = {p.name: oct(p.stat().st_mode & 0o777) for p in [base, *base.iterdir()]}
        assert mode == {base.name: "0o711", "attempts": "0o711", "tmp": "0o711", "records": "0o700"}, mode
        records = sorted((base / "records").glob("*.json"))
        assert [r.name for r in records] == ["p01.json", "p04.json"]
        forms = seed_forms(SEED, range(1, 19))
        for r in records:
            assert oct(r.stat().st_mode & 0o777) == "0o600", r.name
            hits = [k for k, v in forms.items() if v in r.read_text()]
            assert not hits, f"{r.name} holds the seed: {hits}"
    finally:
        real_rmtree(base, ignore_errors=True)
