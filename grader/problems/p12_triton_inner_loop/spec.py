"""Problem 12: the decode kernel's inner loop, in Triton (chapter 6).

Graded on the CPU under TRITON_INTERPRET=1 (the judge sets it when there is no GPU) or
on a CUDA GPU. The answer must be the kernel's: the judge also launches the file's
``decode_kernel`` itself (``kernel=KernelContract``, ``judge_launch`` below) in a process
where no other line of the file runs, and a case passes only when both answers do.
The reference is mlacourse.attention. The named mistakes are Triton files
(mistakes/p12_triton_inner_loop/); the judge recognises them through numpy models of
those files (MODELS), tile by tile in float64 while a learner's kernel computes in float32
(tf32 on a GPU), so a slip is recognised within the grading tolerance (_close) rather
than exactly."""

from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, KernelContract, Problem, compare_out_lse, load_mistakes, memo_twins,
                         new_values, row_offsets, uneven_rows_edge, wide_row_edge)
from mlacourse.attention import attention

FN = "triton_inner_loop"
H, D_K, D_V = 16, 64, 32  # the public case; tl.dot needs every dimension >= 16 on a GPU
# hidden shapes (h_q, d_k, d_v): powers of two >= 16, each axis three values per seed
HIDDEN_SHAPES = [(16, 64, 32), (32, 128, 64), (64, 32, 16)]
BLOCK_T = 16  # the launcher's tile height
RTOL = ATOL = 1e-2  # tf32 matmuls (a GPU default) err up to ~3e-3 here; the interpreter ~1e-6

STATEMENT = rf"""
Write the inner loop of a decode-attention kernel in **Triton**: the online softmax
that walks over the cached rows one tile at a time. The launcher, the kernel signature,
the loads of q and the stores are given in `practice/p12_triton_inner_loop.py`; fill in
the loop and the final normalisation, then delete the `raise NotImplementedError` line
in `triton_inner_loop`.

`triton_inner_loop(q, kv, cache_seqlens, d_v, scale)`:

| argument | shape | meaning |
|---|---|---|
| `q` | `[b, h_q, d_k]` | one query token per sequence, h_q heads (absorbed MLA: all heads share the cache) |
| `kv` | `[b, t_max, d_k]` | cached rows per sequence; rows at and past `cache_seqlens[i]` are **NaN** |
| `cache_seqlens` | `[b]` int32 | valid rows per sequence (can be 0) |
| `d_v` | int | V is the **first** d_v dims of each row |
| `scale` | float | softmax scale |

Return `(out [b, h_q, d_v], lse [b, h_q])`: softmax attention of each sequence's heads
over its valid rows; an empty sequence gives out 0 and lse -inf. One program handles
one sequence and all its heads; tiles are `BLOCK_T = {BLOCK_T}` rows, so the last tile
is usually partial (mask it). The public case uses h_q = {H}, d_k = {D_K}, d_v = {D_V};
hidden cases use other powers of two (h_q 16-64, d_k 32-128, d_v 16-64), so take the
sizes from the arguments, as the launcher does. Keep the softmax stable, head by head:
in one hidden case one head's scores sit near +750 and another's near -750, so the
running max must be each head's own (a max over the whole tile fails), and in another a
head's scores run from near -800 to +800 on a later tile, so it must be raised tile by
tile; use the `scale` given (one case passes another than 1/sqrt(d_k)). Everything is float32.

**The answer must be the kernel's.** Besides calling your `triton_inner_loop`, the judge
launches your `decode_kernel` itself, the way the given launcher does (one program per
sequence, the same arguments, `out` and `lse` filled with NaN beforehand), in a process
where no other line of your file runs; a case passes only when both answers are right.
So the kernel (and any other `@triton.jit` function it calls) may use only its arguments,
`triton` and `triton.language`, number constants defined at the top of the file, and
`range`, `float`, `int`, `min`, `max`, `abs`, `bool`: no other modules, names or
imports inside it.

Checked against `mlacourse.attention.attention` per sequence with |got - expected| <=
{ATOL:g} + {RTOL:g} * |expected| (tf32 on a GPU fits; the CPU interpreter is ~1e-6).
Needs torch and triton (`pip install torch triton`); without a GPU the judge runs the
kernel in Triton's interpreter (TRITON_INTERPRET=1). Interpreter traps: an unmasked load
past the end of a tensor can crash the process; use fp32 everywhere.
"""

HINTS = [
    "Keep three running values per head: m (max score so far), l (sum of exp(score - m)) "
    "and acc (sum of exp(score - m) * v). Start them at -inf, 0 and 0 (given).",
    "for start in range(0, seqlen, BLOCK_T): rows = start + tl.arange(0, BLOCK_T); "
    "valid = rows < seqlen. Load k [BLOCK_T, D_K] and v [BLOCK_T, D_V] from the same rows "
    "with mask=valid[:, None], other=0.0.",
    "s = tl.dot(q, tl.trans(k)) * scale, then s = tl.where(valid[None, :], s, -inf). "
    "m_new = max(m, row max of s); alpha = exp(m - m_new); p = exp(s - m_new[:, None]).",
    "l = l * alpha + sum(p); acc = acc * alpha[:, None] + tl.dot(p, v); m = m_new. After "
    "the loop: out = acc / l and lse = m + log(l), guarding l == 0 with tl.where.",
]



def judge_launch(kernel, q, kv, cache_seqlens, d_v, scale, block_t=16):
    """How the judge launches the learner's ``decode_kernel`` (the stub's launcher, with
    the outputs poisoned): sent to the sandbox as source, so it is self-contained."""
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    q_t = torch.as_tensor(q, dtype=torch.float32).to(device).contiguous()       # [b, H, D_K]
    kv_t = torch.as_tensor(kv, dtype=torch.float32).to(device).contiguous()     # [b, t_max, D_K]
    lens = torch.as_tensor(cache_seqlens, dtype=torch.int32).to(device)         # [b]
    n_seq, n_heads, d_k = q_t.shape
    out = torch.full((n_seq, n_heads, d_v), float("nan"), dtype=torch.float32, device=device)
    lse = torch.full((n_seq, n_heads), float("nan"), dtype=torch.float32, device=device)
    kernel[(n_seq,)](q_t, kv_t, lens, out, lse, kv_t.shape[1], scale,
                     H=n_heads, D_K=d_k, D_V=d_v, BLOCK_T=block_t)
    return out.cpu(), lse.cpu()


def reference(q, kv, cache_seqlens, d_v, scale):
    outs, lses = [], []
    for b, n in enumerate(cache_seqlens):
        rows = kv[b, :int(n)]  # [n, d_k]
        o, l = attention(q[b], rows, rows[:, :d_v], scale)  # [H, d_v], [H]
        outs.append(o)
        lses.append(l)
    return np.stack(outs), np.stack(lses)  # [b, H, d_v], [b, H]


def _case(name, rng, seqlens, q_std, shape=(H, D_K, D_V), hidden=False, seed=None, scale_factor=1.0):
    h, d_k, d_v = shape
    n_seq = len(seqlens)
    t_max = BLOCK_T * max(1, -(-max(seqlens) // BLOCK_T))  # whole tiles: no read past the end
    kv = rng.standard_normal((n_seq, t_max, d_k))
    for b, n in enumerate(seqlens):
        kv[b, n:] = np.nan  # rows past cache_seqlens are poison
    args = {"q": rng.standard_normal((n_seq, h, d_k)) * q_std, "kv": kv,
            "cache_seqlens": np.asarray(seqlens, dtype=np.int32), "d_v": d_v,
            "scale": float(scale_factor / np.sqrt(d_k))}
    describe = (f"q [{n_seq}, {h}, {d_k}], kv [{n_seq}, {t_max}, {d_k}], cache_seqlens "
                f"{list(seqlens)}, d_v={d_v}" + (f", |q| x{q_std:g}" if q_std > 10 else "")
               )
    return Case(name, FN, args, hidden=hidden, seed=seed, describe=describe)


def make_cases(seed):
    cases = [_case("4 sequences: 5, 16, 33 and 0 tokens", np.random.default_rng(12),
                   [5, 16, 33, 0], q_std=3.0)]
    rng = np.random.default_rng(seed)
    for i in rng.permutation(len(HIDDEN_SHAPES)):
        n_seq = int(rng.integers(2, 5))
        lens = [int(x) for x in rng.integers(1, 64, size=n_seq - 1)] + [int(rng.choice([0, 16, 32]))]
        cases.append(_case(f"random lengths, shape {HIDDEN_SHAPES[i]}", rng, lens,
                           q_std=float(rng.choice([2.0, 4.0])), shape=HIDDEN_SHAPES[i],
                           hidden=True, seed=seed))
    big = _case("large scores: heads near +750 and near -750 (is the online softmax stable per head?)",
                rng, [int(rng.integers(17, 64)), int(rng.integers(1, 16))], q_std=4.0,
                shape=(16, 32, 16), hidden=True, seed=seed)
    a = big.args
    for b, n in enumerate(a["cache_seqlens"]):
        a["kv"][b, :n, -1] = 1.0  # not part of V (d_v < d_k): q[b, h, -1] shifts head h's scores
    a["q"][:, :, -1] = row_offsets(rng, a["q"].shape[:2]) / a["scale"]
    big.data["no_twin"] = True  # redrawn, |q| ~ 1e3 everywhere: beyond what tf32 matmuls keep
    cases.append(big)
    wide = _case("a head whose scores are hundreds apart, the largest on the last row (a later tile)", rng,
                 [int(rng.integers(BLOCK_T + 2, 4 * BLOCK_T)), BLOCK_T * int(rng.integers(2, 4))], q_std=1.0,
                 shape=(16, 32, 16), hidden=True, seed=seed)
    a = wide.args
    for b, n in enumerate(a["cache_seqlens"]):
        a["kv"][b, :n, -1] = -1.0  # not part of V: q[b, h, -1] puts head h's scores near -800 ...
        a["kv"][b, n - 1, -1] = 1.0  # ... and near +800 on the sequence's last row
    a["q"][:, :, -1] = np.where(np.arange(a["q"].shape[1]) % 2 == 0, 800.0, -800.0) / a["scale"]
    wide.data["no_twin"] = True  # as the case above
    cases.append(wide)
    cases.append(_case("a scale other than 1/sqrt(d_k)", rng, [int(rng.integers(1, 40)), 0], q_std=2.0,
                       shape=(16, 64, 32), hidden=True, seed=seed,
                       scale_factor=float(rng.choice([0.25, 0.5, 2.0]))))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check,
                      other_shapes=_other_lengths)


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    "q": lambda a, rng: new_values(a["q"], rng),
    "kv": lambda a, rng: new_values(a["kv"], rng),  # NaN rows stay NaN
    "d_v": lambda a, rng: _other_d_v(a, rng),
    "scale": lambda a, rng: a["scale"] * float(rng.choice([0.5, 2.0])),
}


def _other_d_v(args, rng):
    options = [v for v in (16, 32, 64) if v < args["q"].shape[-1] and v != args["d_v"]]
    return int(rng.choice(options)) if options else None


def _other_lengths(args, rng):
    """The same queries, d_v and scale, other sequence lengths (a new cache)."""
    n_seq, d_k = args["q"].shape[0], args["q"].shape[-1]
    lens = [int(x) for x in rng.integers(1, 64, size=n_seq)]
    t_max = BLOCK_T * -(-max(lens) // BLOCK_T)
    kv = rng.standard_normal((n_seq, t_max, d_k))
    for b, n in enumerate(lens):
        kv[b, n:] = np.nan
    return {**args, "kv": kv, "cache_seqlens": np.asarray(lens, dtype=np.int32)}


def check(case, result):
    return compare_out_lse(FN, reference(**case.args), result, rtol=RTOL, atol=ATOL,
                           out_dims="[b, h_q, d_v]", lse_dims="[b, h_q]")


def _close(result, wrong):
    """Within the grading tolerance of a slip's float64 answer (float32 kernels)."""
    try:
        return len(result) == len(wrong) and all(
            np.shape(x) == np.shape(y) and np.allclose(np.asarray(x, np.float64), y, rtol=RTOL,
                                                       atol=ATOL, equal_nan=True)
            for x, y in zip(result, wrong))
    except (TypeError, ValueError):
        return False


def _tiles(q, kv, cache_seqlens, d_v, scale, rescale=True, mask_scores=True, mask_loads=True,
           lse_with_max=True, guard_empty=True, v_cols=None):
    v_cols = v_cols if v_cols is not None else slice(0, d_v)
    outs, lses = [], []
    for b, n in enumerate(int(x) for x in cache_seqlens):
        m = np.full(q.shape[1], -np.inf)
        l = np.zeros(q.shape[1])
        acc = np.zeros((q.shape[1], d_v))
        for start in range(0, n, BLOCK_T):
            rows = start + np.arange(BLOCK_T)
            valid = rows < n
            tile = kv[b, rows] if not mask_loads else np.where(valid[:, None], kv[b, rows], 0.0)
            s = q[b] @ tile.T * scale  # [H, BLOCK_T]
            if mask_scores:
                s = np.where(valid[None, :], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new) if rescale else np.ones_like(m)
            p = np.exp(s - m_new[:, None])
            l = l * alpha + p.sum(axis=1)
            acc = acc * alpha[:, None] + p @ tile[:, v_cols]
            m = m_new
        with np.errstate(all="ignore"):
            if guard_empty or n > 0:
                out = acc / np.where(l > 0, l, 1.0)[:, None]
                lse = np.where(l > 0, (m if lse_with_max else 0.0) + np.log(np.where(l > 0, l, 1)),
                               -np.inf)
            else:
                out, lse = acc / l[:, None], m + np.log(l)
        outs.append(out)
        lses.append(lse)
    return np.stack(outs), np.stack(lses)


def _no_rescale(**a):
    return _tiles(**a, rescale=False)


def _padding_scores_zero(**a):
    if all(int(n) % BLOCK_T == 0 for n in a["cache_seqlens"]):
        return None
    return _tiles(**a, mask_scores=False)


def _unmasked_loads(**a):
    if all(int(n) % BLOCK_T == 0 for n in a["cache_seqlens"]):
        return None
    with np.errstate(invalid="ignore"):
        return _tiles(**a, mask_loads=False, mask_scores=False)


def _lse_without_max(**a):
    return _tiles(**a, lse_with_max=False)


def _empty_gives_nan(**a):
    if all(int(n) > 0 for n in a["cache_seqlens"]):
        return None
    return _tiles(**a, guard_empty=False)


def _v_last_dims(**a):
    return _tiles(**a, v_cols=slice(a["kv"].shape[-1] - a["d_v"], None))


# Models of the files in mistakes/p12_triton_inner_loop/: running a file means launching its
# Triton kernel (seconds a case in the CPU interpreter, and torch + triton in the judge's
# process), so its slip is imitated here in numpy instead; tests/test_judge_corpus.py grades
# each file and requires the judge to name it, which holds each model to its file.
MODELS = {
    "running sums not rescaled": _no_rescale,
    "padding rows scored 0": _padding_scores_zero,
    "unmasked loads": _unmasked_loads,
    "lse without the running max": _lse_without_max,
    "empty sequence gives NaN": _empty_gives_nan,
    "V from the last d_v dims": _v_last_dims,
}
MISTAKES = load_mistakes(__file__, models=MODELS, match=_close)


def _row_max(a):
    """Each (sequence, head) row's largest score over its valid rows: [b, h_q]."""
    return np.array([[float(np.max(a["scale"] * a["q"][b] @ a["kv"][b, :n].T, axis=-1)[h]) if n else -np.inf
                      for h in range(a["q"].shape[1])]
                     for b, n in enumerate(int(x) for x in a["cache_seqlens"])])


def _rows_in_order(a):
    """Each (sequence, head) row's scores over its valid rows, in order."""
    for b, n in enumerate(int(x) for x in a["cache_seqlens"]):
        if n:
            yield from a["scale"] * a["q"][b] @ a["kv"][b, :n].T


EDGES = [
    uneven_rows_edge(_row_max),
    wide_row_edge(_rows_in_order),
    Edge("an empty sequence", lambda a: 0 in list(a["cache_seqlens"]), kind="none"),
    Edge("a partial last tile", lambda a: any(int(n) % BLOCK_T for n in a["cache_seqlens"]), kind="limit"),
    Edge("a sequence of whole tiles", lambda a: any(int(n) and int(n) % BLOCK_T == 0 for n in a["cache_seqlens"]),
         kind="limit"),
    Edge("scores in the hundreds", lambda a: max(
        float(np.nanmax(np.abs(a["scale"] * a["q"][b] @ a["kv"][b, :n].T))) if n else 0.0
        for b, n in enumerate(int(x) for x in a["cache_seqlens"])) > 100),
    Edge("a scale other than 1/sqrt(d_k)", lambda a: abs(a["scale"] * np.sqrt(a["q"].shape[-1]) - 1) > 0.1),
]

PROBLEM = Problem(
    number=12, slug="triton_inner_loop", title="The decode kernel's inner loop in Triton",
    summary="the decode kernel's inner loop in Triton",
    chapter="notebooks/06_decode_kernel.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    requires=("torch", "triton"), timeout_s=60.0,
    reference={FN: reference}, edges=EDGES, kernel=KernelContract("decode_kernel", judge_launch),
    normalises_rows=True,
    no_structure={
        "one": "tl.dot needs every dimension >= 16 on a GPU, so one head or a narrow d_v is outside the "
               "contract; a short sequence is a partial tile (the limit edges)",
        "none first": "a sequence's rows start at row 0 and its first tile holds rows whenever it has any",
        "order": "rows are each sequence's cache in order; the statement has no ids",
        "ties": "float outputs compared with a tolerance: no ranking or choice to tie",
        "largest": "the contract fixes the sizes to powers of two up to 64 heads and d_k 128, all drawn "
                   "among the three hidden shapes of every seed",
    },
    no_twin={"cache_seqlens": "rows at and past cache_seqlens are NaN in kv, so the lengths cannot "
                              "change without kv (other_shapes twins change both)"},
)
