"""One graded attempt as plain data, bounded: what a worker writes into the cache (and
Gradescope's harness into its private folder), and all that a reader accepts back.

A verdict record (grade.record_of makes it) holds texts an attempt influenced: the
exception it raised, what it printed, the values it returned as the judge quotes them.
The judge caps them where they are made; this module caps them again, on both sides of
the file, so that neither a bug nor a file changed behind the grader's back can make a
record large or odd:

  bound(rec)          a copy with every text cut to its limit (LIMITS, ending in
                      "… cut (N more characters)"), lists and mappings shortened, and the
                      whole at most MAX_RECORD_BYTES as written (UTF-8 JSON)
  problem(rec, key)   why a record cannot be used -- not a mapping of exactly the record's
                      fields, a field of the wrong type or over its limit, the record of
                      another problem or other bytes -- or "" when it can
  load(path, key)     (record, "") or (None, why): at most MAX_RECORD_BYTES + 1 bytes are
                      read, decoded as UTF-8 JSON and checked; a file that is larger, not
                      JSON, too deeply nested or wrong in any field is refused, never raised
  write(path, rec)    atomically, readable by its owner only (0600)

The conductor discards a record it cannot use and grades the attempt again; if the fresh
record cannot be used either, the attempt fails with ``unusable`` saying why (the
attempt's verdict, cached like any other), so no record makes every rerun fail.
"""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from grader.reasons import Reason

from .shown import cut

MAX_RECORD_BYTES = 64 << 10          # one (attempt, problem) record in the cache, as written
UNUSABLE = Reason.UNUSABLE_RECORD    # the reason of an attempt whose record could not be used
PROBLEM_STATUSES = ("passed", "failed", "not started", "missing", "unavailable")
CASE_STATUSES = ("pass", "fail", "not started", "not run")
TEST_STATUSES = ("pass", "fail", "error")
MAX_ITEMS = 20                       # named mistakes, case reasons
LIMITS = {                           # characters per text field
    "message": 4000, "failure_text": 6000, "output": 2000, "describe": 1000, "mistake": 1000,
    "test.message": 6000, "test.output": 1000, "name": 300,
}
CASE_KEYS = ("name", "hidden", "function", "describe", "status", "reason", "message", "mistake",
             "mistake_name", "output")
TEST_KEYS = ("name", "task_id", "status", "message", "output", "test_code", "score", "max_score")
RECORD_KEYS = ("problem", "slug", "status", "reason", "message", "public", "hidden", "case_reasons",
               "mistakes", "first", "first_public", "first_hidden", "failure_text", "test", "output")
CACHE_KEYS = ("graded_sha256",)      # added by the worker: the hash of the bytes graded
_tmp_names = itertools.count()


# --------------------------------------------------------------------------- bounding

def _limit(field: str, scale: float) -> int:
    return max(200, int(LIMITS.get(field, LIMITS["name"]) * scale))


def _case(c, scale: float):
    if not isinstance(c, dict):
        return c
    out = dict(c)
    for k in ("name", "function", "status", "reason", "mistake_name"):
        if isinstance(out.get(k), str):
            out[k] = cut(out[k], _limit("name", scale))
    for k in ("describe", "message", "mistake", "output"):
        if isinstance(out.get(k), str):
            out[k] = cut(out[k], _limit(k, scale))
    return out


def _bounded_once(rec: dict, scale: float) -> dict:
    out = dict(rec)
    for k in ("slug", "status", "reason"):
        if isinstance(out.get(k), str):
            out[k] = cut(out[k], _limit("name", scale))
    for k in ("message", "failure_text", "output"):
        if isinstance(out.get(k), str):
            out[k] = cut(out[k], _limit(k, scale))
    if isinstance(out.get("mistakes"), list):
        out["mistakes"] = [cut(m, _limit("name", scale)) if isinstance(m, str) else m
                           for m in out["mistakes"][:MAX_ITEMS]]
    if isinstance(out.get("case_reasons"), dict):
        out["case_reasons"] = {cut(k, _limit("name", scale)): v
                               for k, v in list(out["case_reasons"].items())[:MAX_ITEMS]}
    for k in ("first", "first_public", "first_hidden"):
        out[k] = _case(out.get(k), scale)
    test = out.get("test")
    if isinstance(test, dict):
        test = dict(test)
        for k in ("name", "test_code"):
            if isinstance(test.get(k), str):
                test[k] = cut(test[k], _limit("name", scale))
        for k in ("message", "output"):
            if isinstance(test.get(k), str):
                test[k] = cut(test[k], _limit(f"test.{k}", scale))
        out["test"] = test
    return out


def encoded(rec: dict) -> bytes:
    """The record as the cache holds it (sorted keys, UTF-8)."""
    # a lone surrogate (undecodable bytes an attempt printed) is written as its JSON escape
    return json.dumps(rec, sort_keys=True, indent=1, ensure_ascii=False).encode("utf-8", "backslashreplace")


def bound(rec: dict) -> dict:
    """``rec`` with every text within its limit and the whole within MAX_RECORD_BYTES
    (the limits are halved until it fits: escapes can make a text six times its length)."""
    scale = 1.0
    out = _bounded_once(rec, scale)
    while len(encoded(out)) > MAX_RECORD_BYTES and scale > 1 / 64:
        scale /= 2
        out = _bounded_once(rec, scale)
    return out


# --------------------------------------------------------------------------- checking

def _text(value, limit: int, where: str, optional: bool = False) -> str:
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        return f"{where} is not a text"
    return f"{where} is longer than {limit:,} characters" if len(value) > limit else ""


def _count(value, where: str) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10 ** 9
    return "" if ok else f"{where} is not a count"


def _case_problem(c, where: str) -> str:
    if c is None:
        return ""
    if not isinstance(c, dict) or set(c) != set(CASE_KEYS):
        return f"{where} is not a case summary"
    checks = [_text(c[k], LIMITS["name"], f"{where}.{k}") for k in ("name", "function", "reason")]
    checks += [_text(c["describe"], LIMITS["describe"], f"{where}.describe"),
               _text(c["message"], LIMITS["message"], f"{where}.message"),
               _text(c["output"], LIMITS["output"], f"{where}.output"),
               _text(c["mistake"], LIMITS["mistake"], f"{where}.mistake", optional=True),
               _text(c["mistake_name"], LIMITS["name"], f"{where}.mistake_name", optional=True),
               "" if isinstance(c["hidden"], bool) else f"{where}.hidden is not true or false",
               "" if c["status"] in CASE_STATUSES else f"{where}.status is not a case status"]
    return next((x for x in checks if x), "")


def _test_problem(t) -> str:
    if not isinstance(t, dict) or set(t) != set(TEST_KEYS):
        return "test is not a test entry"
    number = (int, float)
    checks = [_text(t["name"], LIMITS["name"], "test.name"), _text(t["test_code"], LIMITS["name"], "test.test_code"),
              _text(t["message"], LIMITS["test.message"], "test.message", optional=True),
              _text(t["output"], LIMITS["test.output"], "test.output", optional=True),
              "" if t["status"] in TEST_STATUSES else "test.status is not pass, fail or error",
              _count(t["task_id"], "test.task_id"),
              "" if all(isinstance(t[k], number) and not isinstance(t[k], bool) and 0 <= t[k] <= 10 ** 6
                        for k in ("score", "max_score")) else "test.score is not a number"]
    return next((x for x in checks if x), "")


def problem(rec, key: tuple | None = None) -> str:
    """Why ``rec`` cannot be used as the record of ``key`` = (problem number, sha256 of
    the file graded), or "" when it can. ``key`` None: a record not from the cache."""
    if not isinstance(rec, dict):
        return "it is not a record (a JSON object)"
    want = set(RECORD_KEYS) | (set(CACHE_KEYS) if key is not None else set())
    if set(rec) != want:
        odd = sorted(set(rec) ^ want)[:5]
        return f"its fields are not a verdict record's (differs in {', '.join(map(repr, odd))})"
    if key is not None and (rec["problem"] != key[0] or rec["graded_sha256"] != key[1]):
        return "it is the record of another problem or of other bytes"
    checks = [_count(rec["problem"], "problem"), _text(rec["slug"], LIMITS["name"], "slug"),
              "" if rec["status"] in PROBLEM_STATUSES else "status is not a problem status",
              _text(rec["reason"], LIMITS["name"], "reason"), _text(rec["message"], LIMITS["message"], "message"),
              _text(rec["failure_text"], LIMITS["failure_text"], "failure_text"),
              _text(rec["output"], LIMITS["output"], "output")]
    for k in ("public", "hidden"):
        v = rec[k]
        checks.append("" if isinstance(v, list) and len(v) == 3 and not any(_count(x, k) for x in v)
                      and v[0] <= v[1] else f"{k} is not three counts")
    reasons = rec["case_reasons"]
    checks.append("" if isinstance(reasons, dict) and len(reasons) <= MAX_ITEMS and all(
        not _text(k, LIMITS["name"], "") and not _count(v, "") for k, v in reasons.items())
        else "case_reasons is not a few counts by reason")
    mistakes = rec["mistakes"]
    checks.append("" if isinstance(mistakes, list) and len(mistakes) <= MAX_ITEMS and all(
        not _text(m, LIMITS["name"], "") for m in mistakes) else "mistakes is not a few names")
    checks += [_case_problem(rec[k], k) for k in ("first", "first_public", "first_hidden")]
    checks.append(_test_problem(rec["test"]))
    return next((x for x in checks if x), "")


# --------------------------------------------------------------------------- files

def load(path: Path, key: tuple | None = None) -> tuple[dict | None, str]:
    """(the record at ``path``, "") or (None, why it cannot be used). Never raises for
    what the file holds; reads at most MAX_RECORD_BYTES + 1 bytes of it."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return None, "there is none"
    except OSError as e:
        return None, f"it cannot be read ({type(e).__name__})"
    if len(data) > MAX_RECORD_BYTES:
        return None, f"it is larger than {MAX_RECORD_BYTES:,} bytes"
    try:
        rec = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        return None, f"it is not a JSON record ({type(e).__name__})"
    why = problem(rec, key)
    return (None, why) if why else (rec, "")


def write(path: Path, rec: dict) -> None:
    """Write ``rec`` at ``path`` atomically (a temporary file renamed), mode 0600."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{next(_tmp_names)}.part")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(encoded(rec))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


__all__ = ["bound", "problem", "load", "write", "encoded", "MAX_RECORD_BYTES", "UNUSABLE", "LIMITS"]
