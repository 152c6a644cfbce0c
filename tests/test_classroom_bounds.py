"""What crosses back into the teacher's process is bounded and made inert, without the
OS sandbox (the files graded here are the test's own: ``--trust-submissions``):

  * shown.py: one function per medium turns text that acts (ANSI, <img>, javascript:
    links, bidi, formulas, NUL, CR) into inert text;
  * every report `grade` writes, and its terminal output, fed those strings through
    entry names, file names, an attempt's exception and output and a notebook's refusal;
  * verdicts.py: a record is cut to its limits on writing; on reading, one that is too
    large, not JSON, too deep or wrong in any field is refused (never raised), and a cache
    poisoned that way is graded again, with the same gradebook;
  * no record holds the seed in any form; --hide-seed shows it in no report;
  * a seed under 2**64 is warned about.
The hostile class (tests/test_classroom_hostile.py) does all of this again in the sandbox."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from classroom import __main__ as cli
from classroom import grade, shown, verdicts
from grader import runner, seeds
from tests import slow_notebooks as sn
from tests import synthetic_class as sy
from tests.hostile_class import HOSTILE_TEXT, inert_problems

P1 = runner.find(1)
SEED = 0x6A09E667F3BCC908B2FB1366EA957D3F


# --------------------------------------------------------------------------- one function per medium

def test_each_medium_makes_text_inert():
    for text in HOSTILE_TEXT:
        for medium in (shown.terminal, shown.markdown, shown.csv_cell):
            out = medium(text)
            assert out.isprintable(), (medium.__name__, text, out)
        assert all(c in "\n\t" or c.isprintable() for c in shown.json_text(text))
    assert shown.terminal("a\x1b[31mb") == "a\\x1b[31mb" and shown.terminal("x\u202ey") == "x\\u202ey"
    assert shown.terminal("a\\b") == "a\\\\b"   # an escape cannot be forged
    assert shown.markdown("<img src=x>") == "`<img src=x>`"
    assert shown.markdown("a`b") == "``a`b``" and shown.markdown("`x") == "`` `x ``"
    assert shown.csv_cell('=HYPERLINK("x")') == '\'=HYPERLINK("x")' and shown.csv_cell(" -1") == "' -1"
    assert shown.csv_cell("\r=1") == "\\r=1"
    assert shown.json_text("two\nlines\u202e\x00") == "two\nlines\\u202e\\x00"
    assert shown.json_text("\udc80") == "\\udc80" and json.loads(json.dumps(shown.json_text("\udc80")))
    cut = shown.cut("x" * 100_000, 300)
    assert len(cut) <= 300 and cut.endswith("more characters)") and "cut" in cut


# --------------------------------------------------------------------------- every report

def _stub() -> bytes:
    return sy.stub(P1).text


@pytest.fixture(scope="module")
def acting_class(tmp_path_factory):
    """Entries whose names act, an attempt that prints and raises acting text, a notebook
    whose refusal quotes it; graded with the CLI (--trust-submissions: the test's files)."""
    base = tmp_path_factory.mktemp("acting")
    subs = base / "subs"
    for k, name in enumerate(["<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "\x1b[2Jred",
                              "=HYPERLINK(\"http://e\",\"x\")", "\u202eexe.cod", "ok"]):
        d = subs / name / "practice"
        d.mkdir(parents=True)
        (d / P1.filename).write_bytes(_stub())
        acting_file = d / f"{HOSTILE_TEXT[k % 3]}.py"   # one holds a "/": a folder inside
        acting_file.parent.mkdir(parents=True, exist_ok=True)
        acting_file.write_bytes(b"x = 1\n")
    loud = subs / "loud" / "practice"
    loud.mkdir(parents=True)
    (loud / P1.filename).write_text(
        f"T = {HOSTILE_TEXT!r}\nprint(' '.join(T))\n"
        "def kv_cache_bytes(*a, **k):\n    print(T[0], T[3], T[6])\n    raise ValueError(' | '.join(T))\n")
    nb = subs / "nb" / "practice"
    nb.mkdir(parents=True)
    (nb / "p01.ipynb").write_bytes(sn.notebook([
        "for helper in [1]:  # <img src=x onerror=alert(1)>\x1b[31m\u202e\x9b1m\x0b=1\n    pass",
        "def kv_cache_bytes(*args, **kwargs):\n    return helper"]))
    out = base / "grades"
    secret = base / "secret.txt"
    secret.write_text(f"{SEED}\n")
    return subs, out, secret


def _grade(capsys, subs, out, secret, *extra):
    rc = cli.main(["grade", str(subs), "--out", str(out), "--seed-file", str(secret), "--problems", "1",
                   "--workers", "2", "--no-progress", "--trust-submissions", "--hide-seed", *extra])
    got = capsys.readouterr()
    return rc, got.out + got.err


def test_every_report_and_the_terminal_are_inert(acting_class, capsys):
    subs, out, secret = acting_class
    rc, terminal = _grade(capsys, subs, out, secret)
    assert rc == 0, terminal[-3000:]
    problems = inert_problems(out, terminal)
    assert problems == [], "\n".join(problems)
    # the acting text reached every report, escaped
    matching = (out / "matching.md").read_text()
    assert "`<img src=x onerror=alert(1)>/`" in matching and "\\x1b[2Jred" in matching
    loud = json.loads((out / "results" / "loud.json").read_text())
    assert "onerror" in loud["tests"][0]["message"] and "\\x1b[2J" in loud["tests"][0]["message"]
    assert "onerror" in (out / "summary.md").read_text()   # the notebook's refusal, quoted inertly
    assert "NOT GRADED: nb problem 1" in terminal and "\x1b" not in terminal
    # and --hide-seed shows the seed nowhere, in no form
    forms = [str(SEED), f"{SEED:x}", f"{SEED:X}", str(seeds.for_problem(SEED, 1)), f"{seeds.for_problem(SEED, 1):x}"]
    for p in out.rglob("*"):
        if p.is_file() and p.name != "seed.txt" and p.suffix != ".png":
            text = p.read_text("utf-8", "replace")
            assert not [f for f in forms if f in text or f in p.as_posix()], p
    assert not [f for f in forms if f in terminal]


# --------------------------------------------------------------------------- records

def _a_record() -> dict:
    r = runner.grade(P1, None, SEED, isolation="process")   # the committed stub: not started
    rec = grade.record_of(r, None)
    rec["graded_sha256"] = "a" * 64
    return rec


def test_a_record_is_bounded_where_it_is_made_and_where_it_is_read(tmp_path):
    rec = _a_record()
    huge = dict(rec, message="M" * (40 << 20), output="\x1b" * (1 << 20), failure_text="F" * 10**6,
                mistakes=["m" * 10**5] * 1000)
    bounded = verdicts.bound(huge)
    assert len(verdicts.encoded(bounded)) <= verdicts.MAX_RECORD_BYTES
    assert bounded["message"].endswith("more characters)") and len(bounded["mistakes"]) <= verdicts.MAX_ITEMS
    assert verdicts.problem(bounded, (1, "a" * 64)) == ""
    path = tmp_path / "rec.json"
    verdicts.write(path, bounded)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert verdicts.load(path, (1, "a" * 64))[0] == bounded
    for poison, why in [
            (json.dumps(dict(rec, message="M" * (1 << 20))), "larger than"),
            ('{"problem": 1, "status": ', "not a JSON record"),
            ("[" * 30000 + "]" * 30000, "not a JSON record"),
            (b"\xff\xfe".decode("latin-1"), "not a JSON record"),
            (json.dumps(dict(rec, public="forever")), "public is not three counts"),
            (json.dumps(dict(rec, status=["passed"])), "status is not a problem status"),
            (json.dumps(dict(rec, first={"name": 7})), "first is not a case summary"),
            (json.dumps(dict(rec, test=dict(rec["test"], score="all"))), "test.score is not a number"),
            (json.dumps(dict(rec, extra=1)), "fields are not a verdict record's"),
            (json.dumps(dict(rec, graded_sha256="b" * 64)), "another problem or of other bytes"),
            (json.dumps(5), "not a record")]:
        path.write_text(poison, encoding="latin-1")
        got, reason = verdicts.load(path, (1, "a" * 64))
        assert got is None and why in reason, (poison[:40], reason)


def test_no_record_holds_the_seed_and_hide_seed_shows_it_nowhere():
    wrong = sy.wrong(P1, "s").text
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"seedless-{os.getpid()}" / P1.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(wrong)
    try:
        r = runner.grade(P1, path, SEED, isolation="process")
    finally:
        path.unlink()
        path.parent.rmdir()
    text = json.dumps(grade.record_of(r, path))
    forms = grade.seed_forms(SEED, [1])
    assert forms and not [f for f in forms if f in text]
    rec = json.loads(text)
    shown_rec = json.dumps(grade.show_seed(rec, SEED, hide=False))
    hidden = json.dumps(grade.show_seed(rec, SEED, hide=True))
    if "{SEED}" in text:   # a hidden case failed first: its Reproduce line names the seed to the teacher
        assert str(SEED) in shown_rec and "<seed>" in hidden
    assert not [f for f in forms if f in hidden]
    assert grade.scrub_seed(f"x {SEED:x} y 0x{SEED:X} z {SEED}1", SEED) == f"x {{SEED}} y 0x{{SEED}} z {SEED}1"


def test_a_poisoned_cache_is_graded_again(tmp_path):
    subs = tmp_path / "subs"
    for sid, kind in (("alice", sy.right), ("bob", sy.wrong), ("carol", sy.stub)):
        (subs / sid / "practice").mkdir(parents=True)
        (subs / sid / "practice" / P1.filename).write_bytes(kind(P1, sid).text)
    st = grade.Settings(SEED, "test", [P1], workers=2, isolation="process")
    out = tmp_path / "grades"
    first = grade.grade_class(subs, out, st, progress=False, log=lambda *a: None)
    from classroom import gradebook
    gradebook.write(first, out)
    book = (out / "gradebook.csv").read_bytes()
    records = sorted((out / ".cache").glob("*/*.json"))
    assert len(records) == 3
    records[0].write_text('{"problem": 1')
    rec = json.loads(records[1].read_text())
    records[1].write_text(json.dumps(dict(rec, timeout_s="forever", public="x")))
    with open(records[2], "w") as f:
        f.write('{"message": "' + "M" * (50 << 20) + '"}')
    again = grade.grade_class(subs, out, st, progress=False, log=lambda *a: None)
    assert again.graded_now == 3 and again.not_graded == 0
    gradebook.write(again, out)
    assert (out / "gradebook.csv").read_bytes() == book
    assert all(r.stat().st_size <= verdicts.MAX_RECORD_BYTES for r in records)


def test_a_fresh_record_the_conductor_cannot_use_is_the_attempts_failure():
    rec = grade.unusable_record(P1, "it is larger than 65,536 bytes", "c" * 64)
    assert verdicts.problem(rec, (1, "c" * 64)) == ""
    assert rec["status"] == "failed" and rec["reason"] == verdicts.UNUSABLE
    assert "could not use the verdict record" in rec["message"]


def test_a_weak_seed_is_warned_about(tmp_path, capsys):
    subs = tmp_path / "subs"
    (subs / "alice" / "practice").mkdir(parents=True)
    (subs / "alice" / "practice" / P1.filename).write_bytes(_stub())
    rc = cli.main(["grade", str(subs), "--out", str(tmp_path / "g"), "--seed", "12345", "--problems", "1",
                   "--no-progress", "--trust-submissions"])
    err = capsys.readouterr().err
    assert rc == 0 and "under 2**64" in err and "secrets.randbits(128)" in err
