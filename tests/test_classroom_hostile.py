"""A hostile class graded as a teacher grades: `python -m classroom grade` with 2
workers, a secret seed file (and the seed in $MLA_CLASS_SEED), HOME pointing at a folder
of the test's. Honest students sit next to every attack of issue 16 (tests/hostile_class.py:
dir_fd reads and writes, /proc, setsid daemons and double forks, signals to the workers,
the conductor and a canary, the result pipe's token, planted .pth/usercustomize/.bashrc/
secrets.py, the seed from argv/env/cwd/file/memory printed encoded, solutions/ executed,
other students' staged copies overwritten, a fork storm, a 2 GiB memfd, 500 MiB written
outside scratch) and every matching or report forgery (_student09, a newline in a file
name, U+202E, a 252-character folder, +7+7 and =cmd cells).

Asserted: each honest student's grade equals their grade in a run without the attackers;
no attacker gets a point; the submissions, the venv, the repository and HOME are
byte-identical afterwards; no process of the run survives it and the canary is untouched;
the seed appears in no student-visible output in any encoding, and in no attempt's output
at all; the run ends within its budget. Needs the OS sandbox: skipped without bubblewrap
on a learner's machine, a failure in CI."""
from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import jail
from tests import synthetic_class as sy
from tests.hostile_class import ATTACKS, MARK, attack_source, honest_class
from tests.sandbox_support import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
SEED = 1839204715
BUDGET_S = 240
HONEST = ("student01", "student02", "student03", "student05", "student06", "student09")
LONG = "y" * 252
FORGERIES = ("_student09", "x_\u202eexe.cod", "+7+7", "-2+3", "@SUM(A1)", "=cmd|' /C calc'!A0")
NEWLINE_NAME = "notes\n## student01\n- p01: `forged.py` (exact)\nnotes.py"
# what the attacks may have written, removed after the test whatever happened
PLANTED = ["secrets.py", "sitecustomize.py", "mlahostile.big"]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")
slow = pytest.mark.slow


def seed_forms(seed: int) -> dict:
    d = str(seed)
    return {"plain": d, "reversed": d[::-1], "digit-spaced": " ".join(d),
            "base64": base64.b64encode(d.encode()).decode(), "hex": d.encode().hex(), "0x": hex(seed)}


def tree_digest(folder: Path) -> dict:
    """{relative path: sha256} of every file under folder (names with any bytes)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(folder))
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "dir"
    return out


def venv_digest() -> dict:
    """The venv's site-packages as the issue's attack changed it: the listing and every .pth."""
    out = {}
    for site in jail.site_dirs():
        names = sorted(os.listdir(site))
        out[site] = names
        for n in names:
            if n.endswith(".pth"):
                out[f"{site}/{n}"] = hashlib.sha256(Path(site, n).read_bytes()).hexdigest()
    return out


def repo_digest() -> dict:
    """Tracked files' bytes and the list of untracked, not ignored files."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    out = {}
    for name in filter(None, tracked.decode().split("\0")):
        p = ROOT / name
        out[name] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "missing"
    others = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout
    out["<untracked>"] = sorted(filter(None, others.decode().split("\0")))
    return out


def live_processes() -> dict:
    """pid -> (command line, state) of every process not a zombie."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out[int(pid)] = (cmd, state)
    return out


def judge_cgroups() -> set:
    """The per-attempt cgroups (grader/limits.py) that exist now, in every hierarchy."""
    from grader import limits
    parents = list((limits._v1_parents() or {}).values()) + [p for p in [limits._v2_parent()] if p]
    return {str(d) for parent in parents for d in parent.glob("mla-judge-*")}


def of_the_run(cmd: bytes, out_dir: Path) -> bool:
    return (MARK.encode() in cmd or b"/judge/child.py" in cmd or cmd.startswith(b"bwrap\0")
            or b"classroom.worker" in cmd or str(out_dir).encode() in cmd)


def write_folder(root: Path, sid: str, files: dict):
    for rel, data in files.items():
        f = root / sid / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)


def grade_cli(subs: Path, out: Path, secret: Path, home: Path, timeout: float):
    # matplotlib's own font cache (the teacher's chart) goes elsewhere: HOME must show only
    # what attempts did to it
    env = dict(os.environ, HOME=str(home), MLA_CLASS_SEED=str(SEED), PYTHONPATH=str(ROOT),
               MPLCONFIGDIR=str(home.parent / "mplconfig"))
    cmd = [sys.executable, "-m", "classroom", "grade", str(subs), "--out", str(out),
           "--seed-file", str(secret), "--workers", "2", "--problems", "1,4,5", "--hide-seed",
           "--no-progress"]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - t0


def rows(out: Path) -> dict:
    with open(out / "gradebook.csv", newline="") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def verdict_rows(out: Path) -> dict:
    with open(out / "verdicts.csv", newline="") as f:
        return {(r["student"], r["problem"]): r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, request):
    require_sandbox()
    base = tmp_path_factory.mktemp("hostile")
    subs, alone = base / "subs", base / "subs_alone"
    out, out_alone = base / "grades", base / "grades_alone"
    home = base / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".bashrc").write_text("# the teacher's own .bashrc\n")
    secret = base / "secret.txt"
    secret.write_text(f"{SEED}\n")
    canary = subprocess.Popen(["sleep", "900"])
    known = {"repo": str(ROOT), "secret": str(secret), "subs": str(subs), "out": str(out),
             "home": str(home), "sites": jail.site_dirs(), "canary": canary.pid, "mark": MARK}
    for sid, files in honest_class(ROOT).items():
        write_folder(subs, sid, files)
        write_folder(alone, sid, files)
    for name in ATTACKS:
        write_folder(subs, f"x_{name}", {"practice/p01_kv_cache_bytes.py": attack_source(name, known)})
    stub = (ROOT / "practice" / "p01_kv_cache_bytes.py").read_bytes()
    for sid in FORGERIES:
        write_folder(subs, sid, {"practice/p01_kv_cache_bytes.py": stub})
    write_folder(subs, "x_newline", {NEWLINE_NAME: stub})
    write_folder(subs, LONG, {"practice/p01_kv_cache_bytes.py": sy.right(sy._problem(1), "long").text})

    before = {"subs": tree_digest(subs), "home": tree_digest(home), "venv": venv_digest(),
              "repo": repo_digest()}
    procs_before = set(live_processes())
    cgroups_before = judge_cgroups()
    try:
        done, took = grade_cli(subs, out, secret, home, BUDGET_S)
        gradebook_after_run = (out / "gradebook.csv").read_bytes()
        time.sleep(5)   # the daemons meant to strike after the run wait 3 s
        survivors = {pid: c for pid, (c, _) in live_processes().items()
                     if pid not in procs_before and of_the_run(c, out)}
        canary_state = live_processes().get(canary.pid, (b"", "dead"))[1]
        cgroups_left = judge_cgroups() - cgroups_before
        after = {"subs": tree_digest(subs), "home": tree_digest(home), "venv": venv_digest(),
                 "repo": repo_digest()}
        alone_done, _ = grade_cli(alone, out_alone, secret, home, BUDGET_S)
        yield {"done": done, "took": took, "out": out, "out_alone": out_alone, "alone": alone_done,
               "before": before, "after": after, "survivors": survivors, "canary": canary_state,
               "cgroups_left": cgroups_left,
               "gradebook_after_run": gradebook_after_run, "request": request}
    finally:
        canary.kill()
        canary.wait()
        for pid, (cmd, _) in live_processes().items():   # only what this test's attacks started
            if pid not in procs_before and MARK.encode() in cmd:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for site in jail.site_dirs():
            Path(site, "zz_mlahostile.pth").unlink(missing_ok=True)
        for name in PLANTED:
            (ROOT / name).unlink(missing_ok=True)


@slow
def test_the_run_finishes_within_its_budget_and_grades_everyone(hostile):
    done = hostile["done"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert hostile["took"] < BUDGET_S
    capture = hostile["request"].config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n[hostile] {len(rows(hostile['out']))} students graded in {hostile['took']:.1f} s "
              "with 2 workers")
    verdicts = verdict_rows(hostile["out"])
    assert not [k for k, r in verdicts.items() if r["status"] == "not graded"], \
        "an attempt was left ungraded: an attack reached the machinery"


@slow
def test_each_honest_student_gets_the_grade_they_get_alone(hostile):
    got, alone = rows(hostile["out"]), rows(hostile["out_alone"])
    assert hostile["alone"].returncode == 0, hostile["alone"].stderr[-2000:]
    for sid in HONEST:
        assert got[sid] == alone[sid], (sid, got[sid], alone[sid])
    assert float(alone["student01"]["total"]) == 3 and float(alone["student09"]["total"]) == 2
    va, vb = verdict_rows(hostile["out"]), verdict_rows(hostile["out_alone"])
    for (sid, n), r in vb.items():
        assert va[(sid, n)] == r, (sid, n)


@slow
def test_no_attacker_gets_a_point(hostile):
    got = rows(hostile["out"])
    attackers = {s: r for s, r in got.items() if s.startswith(("x_", "'", "_")) or s in ("+7+7", "-2+3")}
    assert len(attackers) >= len(ATTACKS) + len(FORGERIES), sorted(got)
    assert {s: r["total"] for s, r in attackers.items() if float(r["total"]) != 0} == {}
    long_id = [s for s in got if s.startswith("yyyy")]
    assert len(long_id) == 1 and float(got[long_id[0]]["total"]) == 1   # graded, not crashed


@slow
def test_nothing_outside_the_grades_folder_changed(hostile):
    before, after = hostile["before"], hostile["after"]
    for what in ("subs", "home", "venv", "repo"):
        changed = {k for k in set(before[what]) | set(after[what]) if before[what].get(k) != after[what].get(k)}
        assert not changed, f"{what} changed: {sorted(changed)[:10]}"
    assert (hostile["out"] / "gradebook.csv").read_bytes() == hostile["gradebook_after_run"], \
        "the gradebook changed after the run ended"


@slow
def test_no_process_of_the_run_survives_it(hostile):
    assert hostile["survivors"] == {}, {p: c[:200] for p, c in hostile["survivors"].items()}
    assert hostile["cgroups_left"] == set(), "per-attempt cgroups were left behind"
    assert hostile["canary"] not in ("dead", "T", "t"), f"the canary was {hostile['canary']}"


def _files(folder: Path):
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.name.endswith(".png"):
            yield p, p.read_text("utf-8", "replace")


@slow
def test_the_seed_appears_nowhere_in_any_encoding(hostile):
    out, done = hostile["out"], hostile["done"]
    forms = seed_forms(SEED)
    teacher_files = {"seed.txt", "grading.json", "summary.md", "summary.json"}  # the seed, by design
    for p, text in _files(out):
        rel = p.relative_to(out).as_posix()
        if rel in teacher_files:
            continue
        # the cached verdicts keep the "Reproduce: --seed N" lines (for the teacher); only
        # what an attempt printed could carry an encoding of it
        check = {k: v for k, v in forms.items() if not (rel.startswith(".cache/") and k == "plain")}
        hits = [k for k, v in check.items() if v in text]
        assert not hits, f"{rel} holds the seed ({hits})"
    for k, v in forms.items():
        assert v not in done.stdout + done.stderr, f"the command's output holds the seed ({k})"
    for p, text in _files(hostile["out"] / ".cache"):
        for line in json.loads(text).get("output", "").splitlines():
            assert str(SEED) not in line, f"an attempt printed the seed: {line}"


@slow
def test_names_cannot_forge_reports_or_formulas(hostile):
    out = hostile["out"]
    matching = (out / "matching.md").read_text()
    assert [ln for ln in matching.splitlines() if ln.startswith("## student01")] == ["## student01 (student01/)"]
    assert "\\n## student01" in matching           # the forged heading, shown as an escape
    for name in ("matching.md", "verdicts.csv", "gradebook.csv"):
        text = (out / name).read_text()
        assert "\u202e" not in text, name
    assert "\\u202e" in matching
    with open(out / "gradebook.csv", newline="") as f:
        cells = [c for row in csv.reader(f) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")], "a cell a spreadsheet would run"
    assert "'+7+7" in cells and "'-2+3" in cells and "'@SUM_A1" in cells
    results = sorted(p.name for p in (out / "results").glob("*.json"))
    assert "_student09.json" in results and "student09.json" in results
    assert max(len(n) for n in results) <= 64 + len(".json")


@slow
def test_what_each_attack_got(hostile):
    """The verdict of each attack (printed: the hostile-class table of the report), and the
    ones that must be specific: a memfd over the cap is a memory failure; forged records
    are the attempt's failure, not the judge's."""
    v = verdict_rows(hostile["out"])
    table = {name: (v[(f"x_{name}", "1")]["status"], v[(f"x_{name}", "1")]["reason"]) for name in ATTACKS}
    capture = hostile["request"].config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print("\n[hostile] attack -> verdict on problem 1")
        for name, (status, reason) in table.items():
            print(f"  {name:<10} {status:<8} {reason:<15} {ATTACKS[name][0][:90]}")
    assert not [n for n, (_, reason) in table.items() if reason == "import_error"], \
        "an attack did not even import: it attacked nothing"
    assert table["memfd"] == ("failed", "memory")
    assert table["token"][0] == "failed" and table["token"][1] != "judge_error"
    assert all(status == "failed" for status, _ in table.values())


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_every_attack_compiles(name):
    """(fast) An attack with a syntax error would attack nothing and still 'fail' to score."""
    known = {"repo": "/r", "secret": "/s", "subs": "/u", "out": "/o", "home": "/h", "sites": [],
             "canary": 1, "mark": MARK}
    compile(attack_source(name, known), name, "exec")
