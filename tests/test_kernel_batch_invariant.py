"""Batch invariance (chapter 8): with split-KV, where a sequence is cut -- and so the order in
which its partial results are summed -- depends on the other sequences of the batch, and its
output changes in the last bits; batch_invariant=True cuts no sequence, and one sequence's
out and lse are bitwise identical in any batch (Triton's interpreter on CPU; compiled on a GPU).

Also: the launches of a call do no host-to-device copy (they would sit inside every timed call)."""
import numpy as np
import pytest
import torch

from kernels.mla_decode import VERSION_TABLE, VERSIONS, prepare
from kernels.plan import mla_decode_plan
from mlacourse import schedule as S
from tests.test_kernels import DEVICE, check, heads_for, make_case, page_for

SEQ = 300  # the sequence we follow; its rows are the same in both batches
BATCH_A = [SEQ, 700, 40]  # it comes first here ...
BATCH_B = [500, 60, 20, SEQ]  # ... and last, after other lengths, here
NUM_SMS = 4  # few "SMs": the default plan cuts sequences, as a 132-SM GPU does with a real batch


def batch_with_followed_sequence(lens, where, seed=0):
    """A case whose sequence `where` holds the same q rows and cache rows in every batch."""
    q, cache, bt, sl = make_case(lens, page=64, h_q=16, seed=seed)
    ref_q, ref_cache, ref_bt, ref_sl = make_case([SEQ], page=64, h_q=16, seed=99)
    q[where] = ref_q[0]
    for j in range(-(-SEQ // 64)):  # copy the followed sequence's pages into this batch's pages
        cache[bt[where, j]] = ref_cache[ref_bt[0, j]]
    return q, cache, bt, sl


def _pieces(lens, where, batch_invariant=False):
    plan = S.plan_decode(lens, 16, 1, NUM_SMS, batch_invariant=batch_invariant)
    return [tuple(s[1:3]) for s in plan.segments.tolist() if s[0] == where]


def test_the_split_points_move_with_the_batch():
    a, b = _pieces(BATCH_A, 0), _pieces(BATCH_B, 3)
    assert a != b and (len(a) > 1 or len(b) > 1), (a, b)
    assert _pieces(BATCH_A, 0, True) == _pieces(BATCH_B, 3, True) == [(0, -(-SEQ // 64))]


GPU_CHECK_VERSIONS = [("planned", dict(num_sms=NUM_SMS)), ("splitkv", {})]  # also read by tests/gpu_check.py


@pytest.mark.gpu_check  # kernels/gpu_check.sh runs it on the GPU (its launches are in the compile step's list)
@pytest.mark.parametrize("version, opts", GPU_CHECK_VERSIONS)
def test_one_sequence_is_bitwise_identical_across_batches_only_when_asked(version, opts):
    qa, ca, ba, sa = batch_with_followed_sequence(BATCH_A, 0, seed=1)
    qb, cb, bb, sb = batch_with_followed_sequence(BATCH_B, 3, seed=2)
    results = {}
    for inv in (False, True):
        out_a, lse_a = check(qa, ca, ba, sa, version=version, batch_invariant=inv, **opts)  # and correct
        out_b, lse_b = check(qb, cb, bb, sb, version=version, batch_invariant=inv, **opts)
        results[inv] = (out_a[0], out_b[3], lse_a[0], lse_b[3])
    oa, ob, la, lb = results[True]
    assert torch.equal(oa, ob) and torch.equal(la, lb), "batch_invariant=True: the same bits in both batches"
    oa, ob, la, lb = results[False]
    assert not (torch.equal(oa, ob) and torch.equal(la, lb)), \
        "split at different points, the sequence's result should differ in the last bits"


@pytest.mark.parametrize("version", [v for v in VERSIONS if VERSION_TABLE[v].batch_invariant])
def test_every_version_accepts_batch_invariant(version):
    if not VERSION_TABLE[version].runs_on(DEVICE):
        pytest.skip(f"version {version!r} does not run here (its row of VERSION_TABLE)")
    q, cache, bt, sl = make_case([5, 130], page=page_for(version, 64), h_q=heads_for(version, 16))
    check(q, cache, bt, sl, version=version, batch_invariant=True)


def test_batch_invariant_refuses_what_would_split():
    q, cache, bt, sl = make_case([5, 130], page=64, h_q=16)
    with pytest.raises(ValueError, match="one split per sequence"):
        prepare(q, cache, bt, sl, 512, version="splitkv", batch_invariant=True, num_splits=4)
    plan = mla_decode_plan(sl, 16, 1, num_sms=2)
    with pytest.raises(ValueError, match="batch_invariant=True"):
        prepare(q, cache, bt, sl, 512, version="planned", batch_invariant=True, plan=plan)
    ok = mla_decode_plan(sl, 16, 1, num_sms=2, batch_invariant=True)
    assert ok.batch_invariant and not plan.batch_invariant
    prepare(q, cache, bt, sl, 512, version="planned", batch_invariant=True, plan=ok)


def test_invariant_plans_cover_every_sequence_whole():
    rng = np.random.default_rng(0)
    for _ in range(50):
        lens = rng.integers(0, 3000, size=rng.integers(1, 40))
        sms = int(rng.integers(1, 140))
        plan = S.plan_decode(lens, 16, 1, sms, batch_invariant=True)
        segs = plan.segments.tolist()
        assert sorted(s[0] for s in segs) == list(range(len(lens))) and all(s[3] == -1 for s in segs)
        assert all(s[1] == 0 and s[2] == S.cdiv(lens[s[0]], 64) for s in segs) and len(plan.combine) == 0
        assert plan.num_parts == max(1, sms) and len(plan.part_start) == plan.num_parts + 1
        # no part holds more than the larger of the longest sequence and the even share's budget
        longest = S.cdiv(lens.max(), 64) + plan.overhead
        share = S.cdiv(int(S.cdiv(lens, 64).sum() + plan.overhead * len(lens)), plan.num_parts)
        assert plan.part_work.max() <= max(longest, 2 * share + plan.overhead)


def test_the_price_of_invariance_on_a_skewed_batch():
    """One 16K sequence among 127 one-token ones: uncut, it is one SM's work."""
    lens = np.array([1] * 127 + [16384])
    cut = S.schedule_stats("planned", lens, 128, 1)
    whole = S.schedule_stats("planned", lens, 128, 1, batch_invariant=True)
    assert cut.imbalance < 1.1 and cut.splits > 0
    assert whole.splits == 0 and whole.work_max == 16384 // 64 + S.FIXED_OVERHEAD_BLOCKS
    assert whole.imbalance > 15


# ---- no host-to-device copy in a call's launches --------------------------------------------

def _copies_to_device(fn):
    """Run fn under a dispatch mode that records every op reading a CPU tensor and producing a
    tensor on another device (the "meta" device stands in for a GPU here)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            ins = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
            outs = [o for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor)]
            if any(t.device.type == "cpu" for t in ins) and any(o.device.type != "cpu" for o in outs):
                seen.append(str(func))
            return out

    with Watch():
        fn()
    return seen


def _meta_plan(sl_cpu, h_q, **kw):
    plan = mla_decode_plan(sl_cpu, h_q, 1, **kw)
    for name in ("segments", "part_start", "combine"):
        setattr(plan, name, getattr(plan, name).to("meta"))
    return plan


@pytest.mark.parametrize("version", VERSIONS)
def test_launches_copy_nothing_from_the_host(version):
    q, cache, bt, sl = (t.cpu() for t in make_case([5, 130, 700], page=64, h_q=16))
    meta = [t.to("meta") for t in (q, cache, bt, sl)]
    v = VERSION_TABLE[version]
    opts = dict(plan=_meta_plan(sl, 16, num_sms=2, block_m=v.plan_block_m)) if v.takes_plan else {}
    try:
        import triton.experimental.gluon  # noqa: F401
    except ImportError:
        if v.hopper_only:
            pytest.skip("no Gluon in this triton")
    seen = _copies_to_device(lambda: prepare(*meta, 512, gpu=True, version=version, **opts))
    assert not seen, f"{version}: host-to-device copies while building a call's launches: {seen}"
    # the check can fail: a host tensor moved to the device is caught
    assert _copies_to_device(lambda: torch.arange(3).to("meta"))
