"""Inputs are read-only, and a kernel problem's answer is what the kernel computes.

- child.snapshot / first_change: a deep, type-strict comparison of every argument before
  and after the call, and the words that say where it changed (``waiting[2]``,
  ``running``'s order, ``x[1, 2]``); runner.mutations: only what the contract forbids.
- Problem.kernel, through the real child with a toy Triton problem: the judge launches the
  file's kernel itself (grader/child/kernel.py), so an answer computed outside the kernel
  fails however the file dresses it up, and a kernel that reaches beyond triton is refused.
"""
from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest

from grader import child, runner
from grader.records import ProblemStatus
from grader.spec import INPUTS_RULE, Case, KernelContract, Problem, compare_arrays


def _changes(before: dict, mutate) -> list[str]:
    kept = {k: child.snapshot(v) for k, v in before.items()}
    mutate(before)
    return child.changed_inputs(kept, before)


def _args():
    return {"running": [("a", 3, False), ("b", 1, True), ("c", 7, False)],
            "waiting": [("d", 4), ("e", 2), ("f", 9)],
            "x": np.arange(6.0).reshape(2, 3), "pairs": [[1, 2], [3]], "n": 3, "cap": None,
            "table": {"k": [1, 2]}}


def test_nothing_changed_says_nothing():
    assert _changes(_args(), lambda a: None) == []
    a = {"v": np.array([np.nan, -np.inf, 1.0])}
    assert _changes(a, lambda a: None) == []


def test_each_kind_of_change_is_named_where_it_happened():
    def pop(a):
        a["waiting"].pop(0)
    assert _changes(_args(), pop) == [
        "waiting has 2 items, it had 3: items were removed (the first difference is at waiting[0])"]

    def sort(a):
        a["running"].sort(key=lambda r: not r[2])
    (msg,) = _changes(_args(), sort)
    assert msg.startswith("running: the same items in another order")

    def rewrite(a):
        a["running"][2] = ("c", 5, False)
    assert _changes(_args(), rewrite) == ["running[2][1] was 7, now 5"]

    def nested(a):
        a["pairs"][1].append(4)
    assert _changes(_args(), nested) == [
        "pairs[1] has 2 items, it had 1: items were added (the first difference is at pairs[1][1])"]

    def array(a):
        a["x"][1, 2] *= 2
    assert _changes(_args(), array) == ["x[1, 2] was 5.0, now 10.0 (1 of 6 values changed)"]

    def in_dict(a):
        a["table"]["k"][0] = 9
    assert _changes(_args(), in_dict) == ["table['k'][0] was 1, now 9"]


def test_lookalikes_do_not_hide_a_change():
    """Replacements that compare equal by their own __eq__, subclasses, another dtype."""
    class Liar:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    def liar(a):
        a["running"][0] = Liar()
    assert _changes(_args(), liar) == ["running[0] is now another kind of object (it was a tuple)"]

    class Sub(np.ndarray):
        pass

    def subclass(a):
        a["x"] = a["x"].view(Sub)
    assert _changes(_args(), subclass)[0].startswith("x is now")

    def dtype(a):
        a["x"] = a["x"].astype(np.float32)
    assert "dtype float32" in _changes(_args(), dtype)[0]

    def list_to_tuple(a):
        a["waiting"] = tuple(a["waiting"])
    assert "(it was a list)" in _changes(_args(), list_to_tuple)[0]


def test_the_contract_decides_which_changes_fail():
    """The child's texts start with the argument's name; problem 13 may change its lists."""
    rec = ["free has 2 items, it had 3: items were removed (the first difference is at free[2])",
           "seqlen was 3, now 4", "table[0] was 5, now 6"]
    p13 = runner.find(13)
    assert p13.may_change_inputs and runner.mutations(p13, rec) == ["seqlen was 3, now 4"]
    p14 = runner.find(14)
    assert runner.mutations(p14, rec) == rec
    assert runner.mutations(p14, 7) == ["7"] and runner.mutations(p14, None) == []  # forged: shown, as text


def test_the_read_only_rule_is_added_once():
    p = runner.find(14)
    again = dataclasses.replace(p, slug="again")  # __post_init__ runs again: no second copy
    assert again.statement.count(INPUTS_RULE) == 1


def test_a_list_popped_fails_through_the_child(tmp_path):
    src = tmp_path / "pops.py"
    src.write_text(textwrap.dedent('''
        def schedule_step(running, waiting, token_budget, max_running=None):
            plan, left = [], token_budget
            for rid, n, dec in running:
                if dec and left:
                    plan.append((rid, 1)); left -= 1
            for rid, n, dec in running:
                if not dec and left:
                    plan.append((rid, min(n, left))); left -= min(n, left)
            while waiting and left and (max_running is None or len(running) + len(plan) < 10**9):
                rid, n = waiting.pop(0)
                plan.append((rid, min(n, left))); left -= min(n, left)
                break
            return plan
    '''))
    res = runner.grade(runner.find(14), src, seed=1)
    f = res.first_failure()
    assert res.status is ProblemStatus.FAILED and f.reason == "mutated_input"
    assert "changed its input in place: waiting has" in f.message and "items were removed" in f.message


# ------------------------------------------------------------------ the answer must be the kernel's

def _double_cases(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(64).astype(np.float32)
    x[:5] = 0.0  # zeros in the answer: a zero-filled output holds them before the launch
    return [Case("x [64]", "double", {"x": x}, describe="x [64]")]


def launch_twice(kernel, x):
    """The toy's judge launcher: the kernel writes 2 * x into a NaN-filled output."""
    import torch
    x_t = torch.as_tensor(x, dtype=torch.float32)
    out = torch.full(x_t.shape, float("nan"), dtype=torch.float32)
    kernel[(1,)](x_t, out, x_t.numel(), STORE_FROM=0, BLOCK=64)
    return out


KERNEL_TOY = Problem(
    number=91, slug="double_kernel", title="Double in Triton", chapter="(toy)",
    functions=["double"], statement="double(x) -> 2 * x, computed by a Triton kernel",
    hints=["-"], make_cases=_double_cases,
    check=lambda c, r: compare_arrays("double", 2.0 * c.args["x"], r, rtol=1e-6, atol=0.0),
    requires=("torch", "triton"), timeout_s=60.0, kernel=KernelContract("twice", launch_twice))

KERNEL_HEAD = """
import os
import torch
os.environ.setdefault("TRITON_INTERPRET", "1")
import triton
import triton.language as tl
FACTOR = 2.0

@triton.jit
def twice(x_ptr, out_ptr, n, STORE_FROM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, __BODY__, mask=(offs < n) & (offs >= STORE_FROM))
"""

KERNEL_ATTEMPTS = {  # name: (the kernel's stored value, the attempt's own function, passes?, why not)
    "the kernel computes it": ("FACTOR * x", "out = torch.empty(x_t.shape)\n"
                               "twice[(1,)](x_t, out, x_t.numel(), STORE_FROM=0, BLOCK=64)\nreturn out", True, None),
    "torch computes it, the kernel copies x": ("x", "return 2.0 * x_t", False, "does not match"),
    "torch computes it, the kernel is never launched": ("x", "return 2.0 * x_t", False, "does not match"),
    "the kernel reaches for torch": ("torch.mul(x, 2.0)", "return 2.0 * x_t", False, "the name 'torch'"),
    "the kernel reaches for Python through triton": ("tl.core.builtins", "return 2.0 * x_t", False,
                                                     "the attribute 'core'"),
    # module-level code that would switch any in-process check off: never run where the kernel is
    "module code patches the judge's harness": ("x", "return 2.0 * x_t", False, "does not match"),
}
PATCH = """
import sys
for name, mod in list(sys.modules.items()):
    if name.endswith("kernel") or name.startswith("child") or name == "__main__":
        for attr in ("launch_with", "kernel_module", "kernel_launcher"):
            if hasattr(mod, attr):
                setattr(mod, attr, lambda *a, **k: None)
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", list(KERNEL_ATTEMPTS))
def test_the_judge_launches_the_kernel_itself(tmp_path, name):
    """A case passes only when the kernel, launched by the judge with its own launcher in a
    process where no other line of the file runs, gives the answer too."""
    if runner.missing_requirements(KERNEL_TOY):
        pytest.skip("needs torch and triton")
    stored, body, passes, why = KERNEL_ATTEMPTS[name]
    src = tmp_path / "attempt.py"
    src.write_text(KERNEL_HEAD.replace("__BODY__", stored) + (PATCH if "patches" in name else "")
                   + "\n\ndef double(x):\n    x_t = torch.as_tensor(x)\n" + textwrap.indent(body, "    ") + "\n")
    res = runner.grade(KERNEL_TOY, src, seed=0)
    f = res.first_failure()
    if passes:
        assert res.status is ProblemStatus.PASSED, f.message if f else res.message
    else:
        assert res.status is ProblemStatus.FAILED and f.reason == "no_kernel", f.message if f else res.message
        assert "launched by the judge itself" in f.message and why in f.message, f.message
