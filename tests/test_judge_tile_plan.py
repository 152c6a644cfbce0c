"""Problem 19 (the tile plan of a causal prefill): its hidden cases are checked against
mlacourse.prefill.tile_classes, so the cases here hold tile_classes to a construction that
shares nothing with it -- every (real query, key position) pair asked whether it is visible,
then each tile asked all() and any() -- on every case of many seeds. The model answer's
input errors and the checker's message are tested too."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from grader import runner
from mlacourse.prefill import tile_classes

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = next(p for p in runner.discover([]) if p.number == 19)


def brute_force_plan(n_q, n_k, block_m, block_n, causal=True):
    """0 / 1 / 2 per (query block, KV tile) from the pairs themselves: query j sits at
    position n_k - n_q + j and sees key i when i <= its position (causal) and i < n_k."""
    n_blocks, n_tiles = -(-n_q // block_m), -(-n_k // block_n)
    plan = np.zeros((n_blocks, n_tiles), dtype=np.int64)
    for b in range(n_blocks):
        queries = np.arange(b * block_m, min((b + 1) * block_m, n_q))      # the block's real queries
        for t in range(n_tiles):
            keys = np.arange(t * block_n, (t + 1) * block_n)                # every position of the tile
            sees = np.broadcast_to(keys[None, :] < n_k, (queries.size, keys.size))
            if causal:
                sees = sees & (keys[None, :] <= (n_k - n_q + queries)[:, None])
            plan[b, t] = 2 if sees.all() else 1 if sees.any() else 0
    return plan


def _fast_brute_force(n_q, n_k, block_m, block_n, causal=True):
    """The same construction, vectorised over tiles (the 128K case has 2,048 tiles a row)."""
    n_blocks, n_tiles = -(-n_q // block_m), -(-n_k // block_n)
    keys = np.arange(n_tiles * block_n)
    plan = np.zeros((n_blocks, n_tiles), dtype=np.int64)
    for b in range(n_blocks):
        queries = np.arange(b * block_m, min((b + 1) * block_m, n_q))
        sees = np.broadcast_to(keys[None, :] < n_k, (queries.size, keys.size))
        if causal:
            sees = sees & (keys[None, :] <= (n_k - n_q + queries)[:, None])
        tiles = sees.reshape(queries.size, n_tiles, block_n)
        plan[b] = np.where(tiles.all(axis=(0, 2)), 2, np.where(tiles.any(axis=(0, 2)), 1, 0))
    return plan


def test_the_two_brute_forces_agree_on_small_plans():
    for n_q in range(0, 14):
        for n_k in range(0, 14):
            for bm, bn in [(1, 1), (2, 3), (4, 2), (5, 5)]:
                for causal in (True, False):
                    a = brute_force_plan(n_q, n_k, bm, bn, causal)
                    assert (a == _fast_brute_force(n_q, n_k, bm, bn, causal)).all()
                    assert (a == tile_classes(n_q, n_k, bm, bn, causal)).all(), (n_q, n_k, bm, bn, causal)


@pytest.mark.parametrize("seed", range(12))
def test_every_case_the_judge_sends_agrees_with_the_pairs(seed):
    for case in PROBLEM.make_cases(seed):
        want = _fast_brute_force(**case.args)
        got = tile_classes(**case.args)
        assert got.shape == want.shape and (got == want).all(), f"seed {seed}: {case.name}"


def _solution():
    spec = importlib.util.spec_from_file_location("p19_solution", ROOT / "solutions" / "p19_tile_plan.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.tile_plan


@pytest.mark.parametrize("args,says", [
    ((-1, 5, 4, 4), "n_q must be an integer >= 0"),
    ((5, -2, 4, 4), "n_k must be an integer >= 0"),
    ((5, 5, 0, 4), "block_m must be an integer >= 1"),
    ((5, 5, 4, 0), "block_n must be an integer >= 1"),
    ((5, 5, 2.5, 4), "block_m must be an integer"),
])
def test_the_model_answer_refuses_bad_sizes(args, says):
    with pytest.raises(ValueError, match=says):
        _solution()(*args)


def test_the_checker_names_the_first_wrong_tile():
    case = next(c for c in PROBLEM.make_cases(0) if c.name.startswith("the chapter's extend"))
    plan = tile_classes(**case.args)
    wrong = plan.copy()
    wrong[1, 12] = 2         # block 1 (queries 64 .. 127) sees 385 .. 448 keys: tile 12 (384 .. 415) is masked
    assert plan[1, 12] == 1
    v = PROBLEM.check(case, wrong)
    text = str(v.message)
    assert not v.passed and "query block 1 (queries 64 .. 127)" in text and "KV tile 12 (key positions 384 .. 415)" in text
    assert PROBLEM.check(case, plan.astype(np.int32)).passed
    assert not PROBLEM.check(case, plan.astype(np.float64)).passed
    assert not PROBLEM.check(case, plan.T).passed


@pytest.mark.parametrize("args", [(-1, 5, 4, 4), (5, -2, 4, 4), (5, 5, 0, 4), (5, 5, 4, 0)])
def test_the_reference_refuses_bad_sizes_by_name(args):
    # mlacourse's tile_classes is the judge's reference and the chapter's picture
    with pytest.raises(ValueError, match="need n_q, n_k >= 0 and tiles of at least 1"):
        tile_classes(*args)
