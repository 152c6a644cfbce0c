"""A student cannot slow the class by more than their share.

Each attempt has a whole time budget B_p (grader/plan.py: every process's start-up, the
largest case limit once, a tenth of every case's limit), at which the judge stops it with
"used its whole time budget". So on W workers a class of attempts at problem p finishes
within

    ceil(k / W) * B_p  +  (the honest attempts' own time) / W  +  overhead

where k attempts use their whole budget: each such student adds at most B_p / W. Here: a
class of four honest students and two that sleep just under every deadline (at import and
in every case), graded as a teacher grades it (classroom.grade.grade_class, 2 workers).
"""
from __future__ import annotations

import math
import time

import pytest

from classroom.grade import Settings, grade_class
from grader import plan, runner
from tests.sandbox_support import require_sandbox

pytestmark = pytest.mark.slow
P7 = runner.find(7)
HONEST = [f"honest{i}" for i in range(4)]
STALLING = ["stall1", "stall2"]
STALL = '''
import time
time.sleep({import_s})              # just under the start-up deadline

def decode_roofline(*args, **kwargs):
    time.sleep({case_s})            # just under every case's limit
    return None
'''
OVERHEAD_S = 30.0    # interpreters, sandboxes, cgroups and reports of six students on a busy machine


def test_a_class_with_stalling_students_finishes_within_the_stated_bound(tmp_path):
    require_sandbox()
    subs = tmp_path / "submissions"
    solution = (runner.SOLUTIONS / P7.filename).read_text()
    for sid in HONEST:
        (subs / sid).mkdir(parents=True)
        (subs / sid / P7.filename).write_text(f"# {sid}\n{solution}")
    startup = plan.STARTUP_S["numpy"] + P7.timeout_s
    for sid in STALLING:
        (subs / sid).mkdir(parents=True)
        (subs / sid / P7.filename).write_text(f"# {sid}\n" + STALL.format(import_s=startup - 2, case_s=P7.timeout_s - 0.2))
    budget = plan.attempt_budget_s(P7)
    t0 = time.monotonic()
    res = grade_class(subs, tmp_path / "grades", Settings(2**100 + 7, "test", [P7], workers=2),
                      progress=False, log=lambda *a: None)
    took = time.monotonic() - t0
    bound = math.ceil(len(STALLING) / 2) * budget + OVERHEAD_S
    assert took < bound, f"the class took {took:.0f} s; the stated bound is {bound:.0f} s (B_7 = {budget:.1f} s)"
    records = {g.sub.student: g.records for g in res.students}
    for sid in HONEST:
        assert records[sid][7]["status"] == "passed", records[sid][7]
    for sid in STALLING:
        rec = records[sid][7]
        assert rec["status"] == "failed" and rec["reason"] == "time_budget", rec
