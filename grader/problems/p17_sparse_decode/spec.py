"""Problem 17: top-k sparse MLA decode over FlashMLA's 656-byte FP8 rows -- the
computation of DeepSeek-V3.2's sparse decode kernel, in numpy (chapter 8)."""
from __future__ import annotations

import numpy as np

from grader.spec import (Case, Edge, Problem, compare_out_lse, load_mistakes, memo_twins, new_values,
                         uneven_rows_edge, wide_row_edge)
from mlacourse.fp8 import pack_fp8_row, unpack_fp8_row
from mlacourse.sparse import POISON_BYTE, random_fp8_cache
from mlacourse.sparse import sparse_decode as sparse_reference

FN = "sparse_decode"
RTOL, ATOL = 1e-6, 1e-9
D_LATENT, D_ROPE, ROW = 512, 64, 656
V32_TOPK = 2048  # DeepSeek-V3.2's top-k: the longest index list a statement's case holds

STATEMENT = r"""
Write `sparse_decode(q, kv_cache, indices, softmax_scale)`: decode attention of absorbed
MLA over the top-k cache rows a lightning indexer chose -- what FlashMLA's sparse decode
kernel computes for DeepSeek-V3.2.

| argument | shape | meaning |
|---|---|---|
| `q` | `[b, s_q, h_q, 576]` float64 | absorbed queries: 512 latent dims, then 64 rope dims |
| `kv_cache` | `[num_blocks, page_block_size, 1, 656]` uint8 | FlashMLA's FP8 rows (problem 11): bytes 0-511 e4m3fn latents, 512-527 four float32 tile scales, 528-655 64 bfloat16 rope values |
| `indices` | `[b, s_q, topk]` integers | physical rows (problem 16: `page * page_block_size + slot`) for query token `j` of sequence `i`; `-1` = no key |
| `softmax_scale` | float | multiplies `q . k` (DeepSeek passes 1/sqrt(192) times YaRN's factor, not 1/sqrt(576)) |

Row `r` of the cache is `kv_cache[r // page_block_size, r % page_block_size, 0]`. Decode it to
576 numbers `k_r` = [512 dequantized latents, 64 rope values]; its value vector is the
latent part, `v_r = k_r[:512]`. For every query token `(i, j)` and head `h`, over the
entries `r` of `indices[i, j]` that are not -1:

    s_r = softmax_scale * q[i, j, h] . k_r
    lse[i, h, j] = log(sum_r exp(s_r))                     (natural log)
    out[i, j, h] = sum_r exp(s_r - lse[i, h, j]) * v_r

Return `(out, lse)`: `out [b, s_q, h_q, 512]`, `lse [b, h_q, s_q]` (FlashMLA's layouts).

* Every entry other than -1 is one key: a row listed twice counts twice.
* A query token whose entries are all -1 sees no key: its `out` is 0 and its `lse` is
  **-inf** exactly (FlashMLA's kernel returns +inf there; this course uses -inf, the log of
  an empty sum, which a merge of partial results by log-sum-exp weights 0 -- a +inf would
  make the merged lse +inf).
* Rows no entry names are **poisoned** (every byte 0xFF, which decodes to NaN): read only the
  rows you need. Note that `rows[-1]` in numpy is the last row, not "no row".
* Keep the softmax stable for each row (one head of one query token) on its own: one case
  has heads whose scores are near +750 next to heads near -750 (exp overflows above 709),
  and another has rows whose own scores run from near -800 to +800 (the largest on the
  last key). If you walk a list in tiles, note that a list of V3.2's top-k 2048 may hold
  only -1 until its last few entries.

Checked against `mlacourse.sparse.sparse_decode`: out, then lse, each with |got - expected|
<= 1e-9 + 1e-6 * |expected| (decode in float64). Hidden cases vary b, s_q, h_q, topk, the
page size (not only powers of two), the scale and the cache, and repeat shapes with new values.
"""

HINTS = [
    "Flatten the cache to rows once: flat = kv_cache.reshape(-1, 656); then row r is flat[r].",
    "For one query token: keys = idx[idx != -1] (duplicates stay); if it is empty, out = 0 and "
    "lse = -inf for every head. Otherwise decode flat[keys] as in problem 11 to k [n, 576].",
    "Scores s = softmax_scale * q[i, j] @ k.T, shape [h_q, n]. With m = s.max(axis=1) per head: "
    "lse = m + log(sum exp(s - m)), out = exp(s - lse[:, None]) @ k[:, :512].",
    "lse is laid out [b, h_q, s_q]: lse[i, :, j] = the per-head values of query token j.",
]


# ---- the reference -----------------------------------------------------------------------------

def reference(q, kv_cache, indices, softmax_scale):
    return sparse_reference(q, kv_cache, indices, softmax_scale)  # out [b, s_q, h_q, 512], lse [b, h_q, s_q]


# ---- cases -------------------------------------------------------------------------------------

# the FP8 rows' scale rule, named so the cases stay the same bytes now that mlacourse.fp8 defaults
# to power-of-two scales (the statement asks for code * scale whatever the scale is)
SCALES = "amax"

def _args(rng, b, s_q, h_q, topk, num_blocks, page, holes=0.2, scale=576 ** -0.5, keep_ends=False,
          dup=False, empty_token=False, idx=None):
    """Random arguments: indices drawn from the cache's rows (duplicates possible), a share
    `holes` of them -1, the named rows packed from random data, every other row poisoned.
    keep_ends: rows 0 and n_rows - 1 hold data (so reading them by mistake gives numbers)."""
    n_rows = num_blocks * page
    if idx is None:
        idx = rng.integers(0, n_rows, size=(b, s_q, topk))
        idx[rng.random(idx.shape) < holes] = -1
        if dup:  # at least one row listed twice in one list
            i, j = rng.integers(b), rng.integers(s_q)
            idx[i, j, -1] = idx[i, j, 0] = max(0, int(idx[i, j, 0]))
        if empty_token:
            idx[rng.integers(b), rng.integers(s_q)] = -1
        if keep_ends and not (idx == -1).any():
            idx[0, 0, -1] = -1
    used = idx[idx >= 0].tolist() + ([0, n_rows - 1] if keep_ends else [])
    cache = random_fp8_cache(rng, num_blocks, page, used, magnitude=(0.1, 3.0), scales=SCALES)
    q = rng.standard_normal((b, s_q, h_q, D_LATENT + D_ROPE))
    return {"q": q, "kv_cache": cache, "indices": idx.astype(np.int32 if rng.random() < 0.5 else np.int64),
            "softmax_scale": float(scale)}


def _stable_args(rng, h_q, topk, page):
    """Similar keys scored near +750 by some query rows and near -750 by others, in one call:
    the heads of token 0 alternate +750, -750, ..., those of token 1 the other way round."""
    n_rows = 3 * page
    rows = rng.choice(n_rows, size=topk, replace=False)
    v = rng.standard_normal(D_LATENT + D_ROPE)
    keys = v + 0.01 * rng.standard_normal((topk, D_LATENT + D_ROPE))
    cache = np.full((n_rows, ROW), POISON_BYTE, dtype=np.uint8)
    cache[rows] = pack_fp8_row(keys[:, :D_LATENT], keys[:, D_LATENT:], SCALES)
    cache = cache.reshape(3, page, 1, ROW)
    scale = 576 ** -0.5
    q = rng.standard_normal((1, 2, h_q, D_LATENT + D_ROPE)) * 0.01
    sign = np.where(np.arange(h_q) % 2 == 0, 1.0, -1.0)[:, None]  # [h_q, 1]
    q[0, 0] += sign * v / (v @ v) * 750.0 / scale
    q[0, 1] -= sign * v / (v @ v) * 750.0 / scale
    idx = np.broadcast_to(rows, (1, 2, topk)).astype(np.int64).copy()
    return {"q": q, "kv_cache": cache, "indices": idx, "softmax_scale": scale}


def _late_keys_args(rng, h_q, page):
    """V3.2's top-k of 2048 where query token 0's list holds only -1 until its last few
    entries: any tile of fewer than 2000 entries walked from the front is all -1 first (an
    online softmax whose running max starts at -inf computes -inf - -inf there). Token 1's
    list is -1 with a few keys scattered through it."""
    num_blocks = 4
    n_rows = num_blocks * page
    idx = np.full((1, 2, V32_TOPK), -1, dtype=np.int64)
    n_late = int(rng.integers(3, 41))
    idx[0, 0, V32_TOPK - n_late:] = rng.integers(0, n_rows, n_late)
    spots = rng.choice(V32_TOPK, size=int(rng.integers(5, 40)), replace=False)
    idx[0, 1, spots] = rng.integers(0, n_rows, spots.size)
    return _args(rng, 1, 2, h_q, V32_TOPK, num_blocks, page, idx=idx, scale=float(rng.choice([576 ** -0.5, 0.1])))


def _wide_args(rng, h_q, page):
    """Rows whose scores are hundreds apart INSIDE one row, the largest last: each listed key
    carries rope value -1 or +1 in its first rope dim (+1 only on a token's last key), and
    each head's query weighs that dim by +-A / softmax_scale (A = 400 or 800), so a head's
    scores sit near -A except its last, near +A (or the reverse, for negative heads). A max
    taken from the first tile, or the row's mean, overflows exp there. -1 entries are
    scattered through the lists."""
    n_valid = [int(rng.integers(70, 141)), int(rng.integers(12, 31))]  # token 0 outlasts tiles of 64
    holes = [int(rng.integers(1, 9)), int(rng.integers(1, 9))]
    topk = max(n + k for n, k in zip(n_valid, holes))
    num_blocks = -(-(sum(n_valid) + 8) // page)
    n_rows = num_blocks * page
    rows = rng.permutation(n_rows)[:sum(n_valid)]
    cache = np.full((n_rows, ROW), POISON_BYTE, dtype=np.uint8)
    idx = np.full((1, 2, topk), -1, dtype=np.int64)
    start = 0
    for j, (n, k) in enumerate(zip(n_valid, holes)):
        mine = rows[start:start + n]
        start += n
        latent = rng.standard_normal((n, D_LATENT)) * rng.uniform(0.1, 3.0, (n, 1))
        rope = rng.standard_normal((n, D_ROPE)) * 0.05
        rope[:, 0] = -1.0
        rope[-1, 0] = 1.0               # this token's last key
        cache[mine] = pack_fp8_row(latent, rope)
        slots = np.sort(rng.choice(topk, size=n, replace=False))  # -1 wherever no key is
        idx[0, j, slots] = mine
    scale = 576 ** -0.5
    q = rng.standard_normal((1, 2, h_q, D_LATENT + D_ROPE)) * 0.01
    big = np.where(np.arange(h_q) % 2 == 0, 800.0, 400.0)          # [h_q]
    sign = np.ones((2, h_q))
    sign[1, -1] = -1.0                                             # one head the other way round
    q[0, :, :, D_LATENT] += sign * big / scale
    return {"q": q, "kv_cache": cache.reshape(num_blocks, page, 1, ROW),
            "indices": idx.astype(np.int32 if rng.random() < 0.5 else np.int64), "softmax_scale": scale}


def _redraw(rng, a, q=True, cache=True, indices=True):
    """The same shapes and scale as `a`, new values for the arguments asked for: a cache of
    results (or of the dequantized cache, or of q) keyed on shapes or on one argument fails."""
    b, s_q, h_q, _ = a["q"].shape
    num_blocks, page = a["kv_cache"].shape[:2]
    idx = a["indices"].copy()
    if indices:
        valid = idx >= 0  # the -1 pattern stays, the rows move
        idx[valid] = rng.integers(0, num_blocks * page, size=int(valid.sum()))
    new = {"q": rng.standard_normal(a["q"].shape) if q else a["q"].copy(),
           "kv_cache": (random_fp8_cache(rng, num_blocks, page, idx[idx >= 0], magnitude=(0.1, 3.0),
                                         scales=SCALES)
                        if cache or indices else a["kv_cache"].copy()),
           "indices": idx, "softmax_scale": a["softmax_scale"]}
    return new


def _describe(a, note="", seed=None):
    q, idx = a["q"], a["indices"]
    n_minus = int((idx == -1).sum())
    return (f"q [{', '.join(map(str, q.shape))}], kv_cache [{', '.join(map(str, a['kv_cache'].shape))}] uint8, "
            f"indices [{', '.join(map(str, idx.shape))}] {idx.dtype} ({n_minus} are -1), softmax_scale "
            f"{a['softmax_scale']:.6g}" + (f", {note}" if note else ""))


def make_cases(seed):
    fixed = np.random.default_rng(17)
    small = _args(fixed, 1, 1, 4, 6, 2, 4, idx=np.array([[[5, 0, -1, 6, 2, 3]]]))
    mtp = _args(fixed, 2, 2, 3, 8, 4, 16, holes=0.25)
    empty = _args(fixed, 1, 2, 2, 5, 2, 8, holes=0.0)
    empty["indices"][0, 1] = -1
    cases = [Case("one query token, 4 heads, 6 entries (one -1)", FN, small, describe=_describe(small)),
             Case("two sequences, two query tokens each, pages of 16", FN, mtp, describe=_describe(mtp)),
             Case("a query token whose entries are all -1", FN, empty, describe=_describe(empty))]
    rng = np.random.default_rng(seed)
    hidden = []
    page = int(rng.choice([16, 64, 5]))
    base = _args(rng, int(rng.integers(2, 4)), int(rng.integers(1, 3)), int(rng.integers(2, 9)),
                 int(rng.integers(8, 41)), int(rng.integers(3, 7)), page)
    hidden.append(("a served batch", base))
    hidden.append(("the same shapes again, other values", _redraw(rng, base)))
    hidden.append(("the same q, other rows and cache", _redraw(rng, base, q=False)))
    hidden.append(("the same q and indices, another cache", _redraw(rng, base, q=False, indices=False)))
    hidden.append(("the same cache and indices, other queries", _redraw(rng, base, cache=False, indices=False)))
    hidden.append(("heads scoring near +750 beside heads near -750 (keep each row stable)",
                   _stable_args(rng, int(rng.integers(2, 5)), int(rng.integers(3, 9)), int(rng.choice([4, 16])))))
    hidden.append(("a query token whose entries are all -1",
                   _args(rng, int(rng.integers(1, 3)), int(rng.integers(2, 4)), int(rng.integers(1, 5)),
                         int(rng.integers(3, 20)), 3, 16, empty_token=True)))
    hidden.append(("a row listed twice", _args(rng, 1, int(rng.integers(1, 3)), int(rng.integers(2, 6)),
                                               int(rng.integers(4, 12)), 2, 32, holes=0.1, dup=True)))
    hidden.append(("top-k 1 and one head", _args(rng, int(rng.integers(1, 4)), 1, 1, 1, 4, 8, holes=0.0)))
    hidden.append(("an odd page size and DeepSeek's scale 1/sqrt(192)",
                   _args(rng, 2, 1, int(rng.integers(2, 6)), int(rng.integers(10, 30)), int(rng.integers(2, 5)),
                         int(rng.choice([61, 69, 3])), scale=192 ** -0.5)))
    hidden.append(("-1 entries while the cache's first and last rows hold data",
                   _args(rng, 2, 2, int(rng.integers(2, 5)), int(rng.integers(6, 16)), 3, int(rng.choice([8, 16])),
                         holes=0.3, keep_ends=True, scale=float(rng.choice([0.02, 0.1])))))
    hidden.append(("top-k 2048 whose first 2000 entries or more are -1 (every early tile is empty)",
                   _late_keys_args(rng, int(rng.integers(1, 4)), int(rng.choice([16, 64, 5])))))
    hidden.append(("scores hundreds apart inside one row, the largest last (near -A, then +A)",
                   _wide_args(rng, int(rng.integers(2, 5)), int(rng.choice([16, 64, 7])))))
    order = [int(k) for k in rng.permutation(len(hidden))]  # twins apart, in a random order
    if order[-1] == 0:
        order[0], order[-1] = order[-1], order[0]
    for k in order:
        name, a = hidden[k]
        built = a["indices"].shape[-1] == V32_TOPK or "largest last" in name  # keep their structure
        cases.append(Case(name, FN, a, hidden=True, seed=seed, describe=_describe(a, seed=seed),
                          data={"no_twin": True} if built else {}))
    again = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.items()}
    cases.append(Case("the first served batch once more, after the others", FN, again, hidden=True, seed=seed,
                      describe=_describe(again, seed=seed)))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


def _shuffled_rows(a, rng):
    """The same rows named in another order among the entries (the -1 pattern stays): every
    named row still holds data, and each query token gets other keys."""
    idx = a["indices"].copy()
    valid = idx >= 0
    idx[valid] = rng.permutation(idx[valid])
    return idx


# memo_twins: each argument changed alone (a cache keyed on the others fails)
CHANGES = {
    "q": lambda a, rng: new_values(a["q"], rng),
    "kv_cache": lambda a, rng: _redraw(rng, a, q=False, indices=False)["kv_cache"],
    "indices": _shuffled_rows,
    "softmax_scale": lambda a, rng: a["softmax_scale"] * float(rng.choice([0.5, 2.0])),
}


def check(case, result):
    return compare_out_lse(FN, reference(**case.args), result, rtol=RTOL, atol=ATOL,
                           out_dims="[b, s_q, h_q, 512]", lse_dims="[b, h_q, s_q]")


MISTAKES = load_mistakes(__file__)


def _row_scores(a):
    """Each query row's scores (one head of one query token), in the order its entries are
    listed (rows without a valid entry left out)."""
    flat = a["kv_cache"].reshape(-1, ROW)
    for i, j in np.ndindex(*a["indices"].shape[:2]):
        keys = a["indices"][i, j][a["indices"][i, j] != -1]
        if keys.size:
            yield from a["softmax_scale"] * a["q"][i, j] @ unpack_fp8_row(flat[keys]).T  # [h, n]


def _row_max_scores(a):
    """Largest score of each query row (rows without a valid entry left out)."""
    return np.array([s.max() for s in _row_scores(a)])


def _leading_minus_1(a):
    """The longest run of -1 that opens a list followed by a valid entry."""
    rows = a["indices"].reshape(-1, a["indices"].shape[-1])
    valid = rows != -1
    first = np.where(valid.any(axis=1), valid.argmax(axis=1), 0)
    return int(first.max(initial=0))


def _ends_hold_data(a):
    flat = a["kv_cache"].reshape(-1, ROW)
    return bool((a["indices"] == -1).any() and (flat[0] != POISON_BYTE).any() and (flat[-1] != POISON_BYTE).any())


EDGES = [
    Edge("scores in the hundreds, above 709", lambda a: float(np.max(_row_max_scores(a), initial=-np.inf)) > 709,
         kind="largest"),
    uneven_rows_edge(_row_max_scores),
    wide_row_edge(_row_scores),
    Edge("a query token whose entries are all -1", lambda a: bool((a["indices"] == -1).all(axis=-1).any()),
         kind="none"),
    Edge("a list whose first 2000 entries or more are -1, then keys", lambda a: _leading_minus_1(a) >= 2000,
         kind="none first"),
    Edge("-1 between valid entries", lambda a: bool(((a["indices"][..., :-1] == -1)
                                                       & (a["indices"][..., 1:] >= 0)).any())),
    Edge("a row listed twice", lambda a: any(len(set(r[r >= 0].tolist())) < int((r >= 0).sum())
                                             for r in a["indices"].reshape(-1, a["indices"].shape[-1])), kind="ties"),
    Edge("rows named out of order", lambda a: any(np.any(np.diff(r[r >= 0]) < 0)
                                                  for r in a["indices"].reshape(-1, a["indices"].shape[-1])),
         kind="order"),
    Edge("topk = 1", lambda a: a["indices"].shape[2] == 1, kind="one"),
    Edge("top-k 2048 (DeepSeek-V3.2's)", lambda a: a["indices"].shape[2] == V32_TOPK, kind="largest"),
    Edge("one head", lambda a: a["q"].shape[2] == 1, kind="one"),
    Edge("s_q > 1", lambda a: a["q"].shape[1] > 1),
    Edge("a page size that is not a power of two", lambda a: (a["kv_cache"].shape[1] & (a["kv_cache"].shape[1] - 1)) != 0),
    Edge("a scale other than 1/sqrt(576)", lambda a: abs(a["softmax_scale"] * 24 - 1) > 0.01),
    Edge("-1 entries while the cache's first and last rows hold data", _ends_hold_data, kind="order"),
]

PROBLEM = Problem(
    number=17, slug="sparse_decode", title="Top-k sparse decode over FP8 rows",
    summary="top-k sparse decode over 656-byte FP8 rows; -1 ignored, no key → lse -inf",
    chapter="notebooks/08_flashmla_next.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES, normalises_rows=True,
    no_structure={
        "limit": "no budget, page or pool limit: every listed entry is a key, whatever the list's "
                 "length (top-k 1 and 2048 are edges of their own)",
    },
    fixed={"q.axis3": "the absorbed query is 576 wide by definition: 512 latent + 64 rope dims, the row's K",
           "kv_cache.axis2": "absorbed MLA has exactly one latent KV head (h_kv = 1), as FlashMLA requires",
           "kv_cache.axis3": "a FlashMLA FP8 row is 656 bytes by definition: 512 e4m3 latents, 4 float32 "
                             "scales, 64 bf16 rope values"},
)
