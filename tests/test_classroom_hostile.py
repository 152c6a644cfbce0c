"""A hostile class graded as a teacher grades: `python -m classroom grade SUBS --out GRADES
--seed-file S --hide-seed` with 2 workers, a roster, a deadline and the teacher's times
file, a secret 128-bit seed (also in $MLA_CLASS_SEED), HOME pointing at a folder of the
test's, and every process of the command limited to MEMORY_LIMIT of private memory
(RLIMIT_DATA). Honest students sit next to every attack on the sandbox (tests/hostile_class.py:
dir_fd reads and writes, /proc, setsid daemons and double forks, signals to the workers,
the conductor and a canary, the result pipe's token, planted .pth/usercustomize/.bashrc/
secrets.py, the seed from argv/env/cwd/file/memory printed encoded, solutions/ executed,
other students' staged copies overwritten, a fork storm, a 2 GiB memfd, 500 MiB written
outside scratch), every matching or report forgery (_student09, a newline in a file
name, U+202E, a 252-character folder, +7+7 and =cmd cells), and every attack on what crosses back: 40 MiB
messages, outputs and answers, text that acts (ANSI, <img>, javascript: links, bidi,
formulas, NUL, CR) printed, raised, returned and in entry and file names, an attempt that
sleeps under every limit, seven notebooks built to be slow to read, a refusal quoting
acting code, `student01!` beside student01 with the roster, a claimed submission time, a
zip of 5,000 long names.

Asserted: each honest student's grade equals their grade in a run without the attackers;
no attacker gets a point; the submissions, the venv, the repository and HOME are
byte-identical afterwards; no process of the run survives it and the canary is untouched;
the seed appears, in no encoding (decimal, hex, each problem's stream), in anything a
student or a class discussion sees -- every file but seed.txt, the cache included, and the
terminal; no report lets text act (hostile_class.inert_problems); GRADES stays within
PER_ATTEMPT bytes per student and problem; the command exits 0 within its budget under
the memory limit, and a rerun after the cache is poisoned (a 100 MB record, broken JSON,
fields of the wrong types) does too, regrades exactly the poisoned attempts and writes
the same gradebook. Needs the OS sandbox: skipped without bubblewrap on a learner's
machine, a failure in CI."""
from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import jail
from tests import synthetic_class as sy
from tests.hostile_class import (ATTACKS, MARK, attack_source, conductor_attacks, honest_class,
                                 inert_problems)
from tests.sandbox_support import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
SEED = 0x9E3779B97F4A7C15F39CC0605CEDC834   # 128 bits, as seeds.draw() gives
PROBLEMS = (1, 4, 5)
BUDGET_S = 300
MEMORY_LIMIT = 1 << 30       # RLIMIT_DATA of every process of `grade` (soft: the sandbox sets its own)
PER_ATTEMPT = 160 << 10      # bytes of GRADES per student and problem, besides .work and summary.png
DEADLINE = "2025-03-01T23:59:00+00:00"
TIMES = "student01,2025-03-01T20:00:00+00:00\nx_claims_early,2025-03-02T10:00:00+00:00\n"
HONEST = ("student01", "student02", "student03", "student05", "student06", "student09")
LONG = "y" * 252
FORGERIES = ("_student09", "x_\u202eexe.cod", "+7+7", "-2+3", "@SUM(A1)", "=cmd|' /C calc'!A0")
NEWLINE_NAME = "notes\n## student01\n- p01: `forged.py` (exact)\nnotes.py"
# what the attacks may have written, removed after the test whatever happened
PLANTED = ["secrets.py", "sitecustomize.py", "mlahostile.big"]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")
slow = pytest.mark.slow


def seed_forms(seed: int, problems=()) -> dict:
    """The seed as an attack or a careless report might spell it, and each problem's stream
    (seeds.for_problem) in decimal and hex."""
    from grader import seeds
    d = str(seed)
    forms = {"plain": d, "reversed": d[::-1], "digit-spaced": " ".join(d),
             "base64": base64.b64encode(d.encode()).decode(), "hex of the digits": d.encode().hex(),
             "0x": hex(seed), "hex": f"{seed:x}", "HEX": f"{seed:X}"}
    for n in problems:
        stream = seeds.for_problem(seed, n)
        forms[f"p{n} stream"], forms[f"p{n} stream hex"] = str(stream), f"{stream:x}"
    return forms


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
    """The venv's site-packages as a planted .pth would change it: the listing and every .pth."""
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
    """The per-attempt cgroups (grader/limits.py) that exist now, in every hierarchy, whose
    owner (mla-judge-<pid>-<n>) is dead: a live owner is a judge still running, another
    session's on a shared machine (this run's processes are all gone when it is asked)."""
    from grader import limits
    parents = list((limits._v1_parents() or {}).values()) + [p for p in [limits._v2_parent()] if p]
    found = set()
    for parent in parents:
        for d in parent.glob("mla-judge-*"):
            owner = d.name.split("-")[2]
            if not (owner.isdigit() and Path(f"/proc/{owner}").exists()):
                found.add(str(d))
    return found


PR_SET_CHILD_SUBREAPER = 36   # linux/prctl.h


def adopt_orphans(on: bool) -> None:
    """Make this process the subreaper of everything it starts: a daemon of the run (setsid,
    double fork) is re-parented to this process, not to init, so it stays a descendant."""
    import ctypes
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def parent_of(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def descends_from(pid: int, ancestor: int) -> bool:
    seen = set()
    while pid > 1 and pid not in seen:
        if pid == ancestor:
            return True
        seen.add(pid)
        pid = parent_of(pid)
    return False


def of_the_run(cmd: bytes, out_dir: Path, pid: int) -> bool:
    """A process this run started: a descendant of this test process (the run's daemons
    included: adopt_orphans), or one that names an attack (MARK) or the grades folder. Not
    "any sandbox of this checkout": another test process on the machine (CI runs two at
    once) grades attempts of its own while this one counts."""
    if MARK.encode() in cmd or str(out_dir).encode() in cmd:
        return True
    return descends_from(pid, os.getpid())


def reap_orphans(known: set) -> None:
    """Collect the exit status of adopted processes that have ended (zombies whose parent is
    this process and that no subprocess object of the test waits for)."""
    me = os.getpid()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        pid = int(pid)
        if pid not in known and parent_of(pid) == me:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def write_folder(root: Path, sid: str, files: dict):
    for rel, data in files.items():
        f = root / sid / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)


def _memory_limit():
    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_LIMIT, hard))


def grade_cli(subs: Path, out: Path, secret: Path, home: Path, timeout: float, extra=()):
    """The documented command, every process of it under MEMORY_LIMIT of private memory."""
    # matplotlib's own font cache (the teacher's chart) goes elsewhere: HOME must show only
    # what attempts did to it
    env = dict(os.environ, HOME=str(home), MLA_CLASS_SEED=str(SEED), PYTHONPATH=str(ROOT),
               MPLCONFIGDIR=str(home.parent / "mplconfig"))
    cmd = [sys.executable, "-m", "classroom", "grade", str(subs), "--out", str(out),
           "--seed-file", str(secret), "--workers", "2", "--problems", ",".join(map(str, PROBLEMS)),
           "--hide-seed", "--no-progress", *extra]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=timeout,
                          preexec_fn=_memory_limit)
    done.stdout = done.stdout.decode("utf-8", "surrogateescape")
    done.stderr = done.stderr.decode("utf-8", "surrogateescape")
    return done, time.monotonic() - t0


def folder_size(folder: Path, skip=()) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*")
               if p.is_file() and not any(part in skip for part in p.relative_to(folder).parts))


def poison_cache(out: Path) -> list:
    """Replace cached records with what no reader may trust: 100 MB of a record, broken
    JSON, fields of the wrong types, a deep nest. Returns the poisoned files."""
    records = sorted((out / ".cache").glob("*/*.json"))
    honest = [r for r in records if json.loads(r.read_text()).get("status") == "passed"][:4]
    big, broken, types, deep = honest
    rec = json.loads(big.read_text())
    with open(big, "w") as f:   # a record of the right shape with a 100 MB message
        f.write(json.dumps(dict(rec, message="")).replace('"message": ""', '"message": "' + "M" * (100 << 20) + '"'))
    broken.write_text('{"problem": 1, "status": "passed", "graded_sha256": ')
    rec = json.loads(types.read_text())
    types.write_text(json.dumps(dict(rec, public="forever", status=["passed"], first={"name": 7})))
    deep.write_text("[" * 30000 + "]" * 30000)   # under the size cap, too deep to decode
    return honest


def rows(out: Path) -> dict:
    """The gradebook by student (without the notebooks column, which a class without
    notebooks does not have)."""
    with open(out / "gradebook.csv", newline="") as f:
        return {r["student"]: {k: v for k, v in r.items() if k != "notebooks"} for r in csv.DictReader(f)}


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
    for entry, files in conductor_attacks(ROOT, stub).items():
        if entry.endswith(".zip"):
            subs.mkdir(parents=True, exist_ok=True)
            (subs / entry).write_bytes(files)
        else:
            write_folder(subs, entry, files)
    roster, times = base / "roster.csv", base / "times.csv"
    roster.write_text("student\n" + "\n".join(HONEST) + "\n")
    times.write_text(TIMES)
    extra = ["--roster", str(roster), "--deadline", DEADLINE, "--submitted-at", str(times)]
    for sid in FORGERIES:
        write_folder(subs, sid, {"practice/p01_kv_cache_bytes.py": stub})
    write_folder(subs, "x_newline", {NEWLINE_NAME: stub})
    write_folder(subs, LONG, {"practice/p01_kv_cache_bytes.py": sy.right(sy._problem(1), "long").text})

    before = {"subs": tree_digest(subs), "home": tree_digest(home), "venv": venv_digest(),
              "repo": repo_digest()}
    procs_before = set(live_processes())
    cgroups_before = judge_cgroups()
    adopt_orphans(True)
    try:
        done, took = grade_cli(subs, out, secret, home, BUDGET_S, extra)
        gradebook_after_run = (out / "gradebook.csv").read_bytes()
        time.sleep(5)   # the daemons meant to strike after the run wait 3 s
        survivors = {pid: c for pid, (c, _) in live_processes().items()
                     if pid not in procs_before and of_the_run(c, out, pid)}
        canary_state = live_processes().get(canary.pid, (b"", "dead"))[1]
        cgroups_left = judge_cgroups() - cgroups_before
        after = {"subs": tree_digest(subs), "home": tree_digest(home), "venv": venv_digest(),
                 "repo": repo_digest()}
        alone_done, _ = grade_cli(alone, out_alone, secret, home, BUDGET_S, extra)
        # the cache poisoned behind the grader's back, then the same command again
        out_poisoned = base / "grades_poisoned"
        shutil.copytree(out, out_poisoned, symlinks=True)
        poisoned = poison_cache(out_poisoned)
        rerun, rerun_took = grade_cli(subs, out_poisoned, secret, home, BUDGET_S, extra)
        yield {"done": done, "took": took, "out": out, "out_alone": out_alone, "alone": alone_done,
               "before": before, "after": after, "survivors": survivors, "canary": canary_state,
               "cgroups_left": cgroups_left, "subs": subs,
               "gradebook_after_run": gradebook_after_run, "request": request,
               "rerun": rerun, "rerun_took": rerun_took, "out_poisoned": out_poisoned, "poisoned": poisoned}
    finally:
        canary.kill()
        canary.wait()
        for pid, (cmd, _) in live_processes().items():   # only what this test's run started
            if pid not in procs_before and of_the_run(cmd, out, pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.5)
        adopt_orphans(False)
        reap_orphans(procs_before)
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
    attackers = {s: r for s, r in got.items() if s not in HONEST and not s.startswith("yyyy")}
    n_conductor = len(conductor_attacks(ROOT, b""))
    assert len(attackers) >= len(ATTACKS) + len(FORGERIES) + n_conductor, sorted(got)
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
    """Under --hide-seed only seed.txt (the teacher's, mode 0600) holds the seed: not
    summary.md or summary.json (a class discusses them), not grading.json, not a results
    file, not the cache (no record ever holds it, nor the cache folder's name), not the
    terminal -- in no encoding, each problem's stream included."""
    out, done = hostile["out"], hostile["done"]
    forms = seed_forms(SEED, PROBLEMS)
    assert oct((out / "seed.txt").stat().st_mode & 0o777) == "0o600"
    for p in out.rglob("*"):
        rel = p.relative_to(out).as_posix()
        hits = [k for k, v in forms.items() if v in rel]
        assert not hits, f"a path holds the seed: {rel} ({hits})"
    for p, text in _files(out):
        rel = p.relative_to(out).as_posix()
        if rel == "seed.txt":
            continue
        hits = [k for k, v in forms.items() if v in text]
        assert not hits, f"{rel} holds the seed ({hits})"
    for k, v in forms.items():
        assert v not in done.stdout + done.stderr, f"the command's output holds the seed ({k})"
    assert json.loads((out / "summary.json").read_text())["seed"] is None
    assert "Seed hidden" in (out / "summary.md").read_text()


@slow
def test_names_cannot_forge_reports_or_formulas(hostile):
    out = hostile["out"]
    matching = (out / "matching.md").read_text()
    assert [ln for ln in matching.splitlines() if ln.startswith("## `student01`")] == ["## `student01` (`student01/`)"]
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
    # the cgroup stops the memfd at the cap; on a loaded machine (the 40 MiB attacks grade
    # beside it) the case's deadline can come first. Alone it is always "memory".
    assert table["memfd"] in (("failed", "memory"), ("failed", "timeout"))
    assert table["token"][0] == "failed" and table["token"][1] != "judge_error"
    assert all(status == "failed" for status, _ in table.values())


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_every_attack_compiles(name):
    """(fast) An attack with a syntax error would attack nothing and still 'fail' to score."""
    known = {"repo": "/r", "secret": "/s", "subs": "/u", "out": "/o", "home": "/h", "sites": [],
             "canary": 1, "mark": MARK}
    compile(attack_source(name, known), name, "exec")


@slow
def test_no_report_lets_text_act(hostile):
    """ANSI escapes, <img>, javascript: links, images, bidi controls, formulas, NUL and CR
    -- in names, printed, raised, returned and quoted from a notebook -- act nowhere: no
    raw control, bidi or separator character in any report or on the terminal, no markup
    outside Markdown code spans, no CSV cell a spreadsheet runs, every JSON file valid."""
    done = hostile["done"]
    problems = inert_problems(hostile["out"], done.stdout + done.stderr)
    assert problems == [], "\n".join(problems[:20])
    # and the acting text did reach the reports (escaped), so the check above saw it
    matching = (hostile["out"] / "matching.md").read_text()
    assert "`<img src=x onerror=alert(1)>/`" in matching and "\\x1b[2Jred" in matching
    results = json.loads((hostile["out"] / "results" / "x_text_acts.json").read_text())
    assert "\\x1b[31mRED" in json.dumps(results) or "\\\\x1b[31mRED" in json.dumps(results)
    summary = (hostile["out"] / "summary.md").read_text()
    assert "x_nb_acting_reason" in summary and "onerror" in summary   # the refusal, quoted inertly


@slow
def test_grades_and_cache_stay_within_their_stated_size(hostile):
    """Three attacks produce 40 MiB texts per call, one prints 40 MiB, one returns it: each
    cached record stays within verdicts.MAX_RECORD_BYTES and GRADES within PER_ATTEMPT per
    student and problem (the staged copies in .work, each at most the hand-in's own size,
    and the chart aside)."""
    from classroom import verdicts
    out = hostile["out"]
    students = len(rows(out))
    for rec in (out / ".cache").glob("*/*.json"):
        assert rec.stat().st_size <= verdicts.MAX_RECORD_BYTES, rec.name
    size = folder_size(out, skip={".work", "summary.png"})
    capture = hostile["request"].config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n[hostile] GRADES: {size:,} bytes for {students} students x {len(PROBLEMS)} problems "
              f"({size / (students * len(PROBLEMS)) / 1024:.1f} KiB each; bound {PER_ATTEMPT >> 10} KiB); "
              f".work {folder_size(out / '.work'):,} bytes")
    assert size <= PER_ATTEMPT * students * len(PROBLEMS)
    v = verdict_rows(out)
    for name in ("huge_message", "huge_output", "huge_answer"):
        assert v[(f"x_{name}", "1")]["status"] == "failed", name


@slow
def test_a_name_that_reads_as_a_students_id_takes_nothing_from_her(hostile):
    """`student01!` reads as the id student01: the entry named exactly student01 keeps the
    id, her roster row and her grade (equal to grading her alone); the other is graded under
    an id of its own; both are flagged for the teacher, in matching.md and on the terminal."""
    got, alone = rows(hostile["out"]), rows(hostile["out_alone"])
    assert got["student01"] == alone["student01"] and float(got["student01"]["total"]) == 3
    other = [s for s in got if s.startswith("student01-")]
    assert len(other) == 1 and float(got[other[0]]["total"]) == 0
    matching = (hostile["out"] / "matching.md").read_text()
    mine = matching.split("## `student01`")[1].split("\n## ")[0]
    assert "name collision" in mine and "keeps it" in mine
    theirs = matching.split(f"## `{other[0]}`")[1].split("\n## ")[0]
    assert "name collision" in theirs and "student01!" in theirs
    assert "NAME COLLISION" in hostile["done"].stdout + hostile["done"].stderr


@slow
def test_late_comes_from_the_teacher_never_from_the_submission(hostile):
    """A submitted_at.txt claiming 2000 and zip entries dated 1999 change nothing: the
    teacher's times file says late, so late it is; the claim is shown beside it."""
    got = rows(hostile["out"])
    early = got["x_claims_early"]
    assert early["late"] == "yes" and early["submitted_at"].startswith("2025-03-02T10:00")
    assert "2000-01-01" in early["student_claim"]
    assert got["student01"]["late"] == "no"
    assert got["student02"]["late"] == "unknown"   # not in the teacher's file: nothing else counts
    other = next(s for s in got if s.startswith("student01-"))
    assert got[other]["late"] == "unknown" and "2000-01-01" in got[other]["student_claim"]


@slow
def test_a_poisoned_cache_is_regraded_and_never_fails_the_run(hostile):
    """A 100 MB record, broken JSON, fields of the wrong types and a nest too deep to
    decode, put in the cache behind the grader's back: the same command, under the same
    memory limit, exits 0, grades exactly those attempts again and writes the same
    gradebook as the first run."""
    rerun = hostile["rerun"]
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert f"{len(hostile['poisoned'])} graded now" in rerun.stdout, rerun.stdout[-2000:]
    assert (hostile["out_poisoned"] / "gradebook.csv").read_bytes() == hostile["gradebook_after_run"]
    assert hostile["rerun_took"] < BUDGET_S


def test_the_census_counts_a_daemon_of_the_run_and_not_another_process(tmp_path):
    """The census the survivors test relies on: a setsid, double-forked daemon started by
    this process is still counted (adopt_orphans); a process outside this one's tree (its
    parent, as another test process on the machine would be) is not."""
    before = set(live_processes())
    new = {}
    adopt_orphans(True)
    try:
        daemon = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                  "        time.sleep(60)\n    os._exit(0)\nos._exit(0)\n")
        subprocess.run([sys.executable, "-c", daemon, "census-daemon"], check=True)
        time.sleep(0.3)
        new = {pid: cmd for pid, (cmd, _) in live_processes().items()
               if pid not in before and b"census-daemon" in cmd}
        assert len(new) == 1, new
        (pid, cmd), = new.items()
        assert parent_of(pid) == os.getpid(), "the orphan was not adopted by this process"
        assert of_the_run(cmd, tmp_path, pid)
    finally:
        for pid in new:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
        adopt_orphans(False)
        reap_orphans(before)
    parent = os.getppid()
    assert not of_the_run(Path(f"/proc/{parent}/cmdline").read_bytes(), tmp_path, parent)
