"""The judge tells plausible attempts at problems 1, 4 and 8 apart, through the real
runner (a child process per attempt): right ones pass, wrong ones fail with the named
mistake when it is a known one. (Every spec's own rules: tests/test_judge_specs.py.)"""
from __future__ import annotations

import json
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader.reasons import Reason
from grader.records import ProblemStatus
from grader import child, runner
from grader.problems.p01_kv_cache_bytes import spec as p01_kv_cache_bytes
from grader.problems.p08_absorb_decode import spec as p08_absorb_decode

PROBLEMS = runner.discover()
SEED = 11


def _plain(x):
    """The same data round trip a child's result goes through."""
    return child.decode(json.loads(json.dumps(child.encode(x))))


def test_problem_numbers_and_files_are_consistent():
    numbers = [p.number for p in PROBLEMS]
    assert len(numbers) == len(set(numbers)), "two specs share a number"
    for p in PROBLEMS:
        assert (runner.PRACTICE / p.filename).is_file(), f"no stub for {p.filename}"
        assert (runner.SOLUTIONS / p.filename).is_file(), f"no solution for {p.filename}"
        assert p.statement.strip() and p.hints, f"{p.slug}: statement and hints required"


def failure(res):
    f = res.first_failure()
    assert res.status is ProblemStatus.FAILED and f is not None, res.status
    return f


ATTEMPTS: dict = {}  # (problem number, name) -> source; graded together, in parallel


def attempt(number, name, src):
    ATTEMPTS[(number, name)] = textwrap.dedent(src)
    return (number, name)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("attempts")

    def one(item):
        (number, name), src = item
        path = tmp / f"p{number}_{abs(hash(name))}.py"
        path.write_text(src)
        return (number, name), runner.grade(runner.find(number, PROBLEMS), path, seed=SEED)
    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(pool.map(one, ATTEMPTS.items()))


# ------------------------------------------------------------------ problem 1

P1_HEAD = "def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, " \
          "head_dim=128, n_kv_heads=8, d_latent=512, d_rope=64):\n"


P1_WRONG = [
    ('{"mha": n_heads*head_dim, "gqa": n_kv_heads*head_dim, "mqa": head_dim, "mla": d_latent+d_rope}',
     "K only"),
    ('{"mha": 2*n_heads*head_dim, "gqa": 2*n_kv_heads*head_dim, "mqa": 2*head_dim, "mla": d_latent}',
     "MLA without rope"),
    ('{"mha": 2*n_heads*head_dim, "gqa": 2*n_heads*head_dim, "mqa": 2*head_dim, "mla": d_latent+d_rope}',
     "GQA with all heads"),
    ('{"mha": 2*n_heads*head_dim, "gqa": 2*n_kv_heads*head_dim, "mqa": 2*head_dim, "mla": d_latent+d_rope+1}',
     None),
    ('{"mha": 2*n_heads*head_dim, "gqa": 2*n_kv_heads*head_dim, "mqa": 2*head_dim, "mla": d_latent+d_rope}',
     "one layer"),
]
P1_KEYS = [attempt(1, f"p01 {k}", P1_HEAD + f"    return {per}[kind] * n_tokens * "
                   + ("n_layers * " if mistake != "one layer" else "") + "bytes_per_element\n")
           for k, (per, mistake) in enumerate(P1_WRONG)]


@pytest.mark.parametrize("key, mistake", list(zip(P1_KEYS, [m for _, m in P1_WRONG])))
def test_p01_wrong_attempts(graded, key, mistake):
    f = failure(graded[key])
    assert "expected" in f.message and "bytes" in f.message
    want = {m.name: m.message for m in p01_kv_cache_bytes.MISTAKES}.get(mistake)
    assert f.mistake == want


# ------------------------------------------------------------------ problem 4

P4 = """
def attention_flops(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    pairs = {pairs}
    e = {tokens} * 2 * d_latent * n_heads * (d_nope + d_v) + pairs * 2 * n_heads * ({qk_e} + d_v)
    a = n_new * 2 * n_heads * d_latent * (d_nope + d_v) + pairs * 2 * n_heads * ({qk_a} + d_latent)
    return {{"expand": {k} * e, "absorb": {k} * a}}

def choose_path(n_new, n_ctx, n_heads=128, d_nope=128, d_rope=64, d_v=128, d_latent=512):
    f = attention_flops(n_new, n_ctx, n_heads, d_nope, d_rope, d_v, d_latent)
    return "expand" if f["expand"] {cmp} f["absorb"] else "absorb"
"""
P4_OK = dict(pairs="n_new * n_ctx - n_new * (n_new - 1) // 2", tokens="n_ctx", qk_e="d_nope + d_rope",
             qk_a="d_latent + d_rope", k="1", cmp="<")


def _p4(**changes):
    return P4.format(**{**P4_OK, **changes})


P4_GOOD = attempt(4, "p04 model variant", _p4())


def test_p04_model_variant_passes(graded):
    assert graded[P4_GOOD].status is ProblemStatus.PASSED


P4_WRONG = [
    (dict(pairs="n_new * n_ctx"), "non-causal"),
    (dict(tokens="n_new"), "up-projects only the n_new new tokens"),
    (dict(qk_e="d_nope", qk_a="d_latent"), "leaves out the d_rope"),
    (dict(k="0.5"), "exactly half"),
    (dict(cmp="<="), "On an exact tie"),
    (dict(pairs="n_new * n_ctx - n_new * (n_new + 1) // 2"), None),  # off by one: no named slip
]
P4_KEYS = [attempt(4, f"p04 wrong {k}", _p4(**changes)) for k, (changes, _) in enumerate(P4_WRONG)]


@pytest.mark.parametrize("key, words", list(zip(P4_KEYS, [w for _, w in P4_WRONG])))
def test_p04_wrong_attempts(graded, key, words):
    f = failure(graded[key])
    assert "expected" in f.message
    if words is None:
        assert f.mistake is None
    else:
        assert f.mistake is not None and words in f.mistake


def test_p04_decode_numbers_in_message(graded):
    f = failure(graded[P4_KEYS[1]])
    assert f.case.name.startswith("decode, 8K context") and "275,548,995,584 FLOPs" in f.message


# ------------------------------------------------------------------ problem 8

P8_HEAD = "import numpy as np\n\ndef absorb_decode(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale):\n"
P8_SOFTMAX = "    s = s - s.max(axis=-1, keepdims=True)\n    p = np.exp(s)\n    p = p / p.sum(axis=-1, keepdims=True)\n"
P8_ABSORBED_SCORES = "    q_lat = np.einsum('hd,hcd->hc', q_nope, w_uk)\n" \
                     "    s = scale * (q_lat @ c_kv.T + q_rope @ k_rope.T)\n"
P8_ABSORBED_OUT = "    return np.einsum('hc,hcd->hd', p @ c_kv, w_uv)\n"

P8_EXPANDERS = {
    "expand all heads at once": P8_HEAD
    + "    k = np.einsum('tc,hcd->htd', c_kv, w_uk)\n    v = np.einsum('tc,hcd->htd', c_kv, w_uv)\n"
    + "    s = scale * (np.einsum('hd,htd->ht', q_nope, k) + q_rope @ k_rope.T)\n" + P8_SOFTMAX
    + "    return np.einsum('ht,htd->hd', p, v)\n",
    "loop over heads, expanding one head": P8_HEAD
    + "    outs = []\n    for h in range(q_nope.shape[0]):\n"
    + "        k = c_kv @ w_uk[h]\n        v = c_kv @ w_uv[h]\n"
    + "        s = scale * (k @ q_nope[h] + k_rope @ q_rope[h])\n"
    + "        p = np.exp(s - s.max())\n        outs.append((p / p.sum()) @ v)\n    return np.stack(outs)\n",
    "expand values only, float32": P8_HEAD + P8_ABSORBED_SCORES + P8_SOFTMAX
    + "    c = c_kv.astype(np.float32)\n"
    + "    return np.stack([p[h] @ (c @ w_uv[h].astype(np.float32)) for h in range(len(p))])\n",
}

P8_LEGIT = {
    "model variant": P8_HEAD + P8_ABSORBED_SCORES + P8_SOFTMAX + P8_ABSORBED_OUT,
    "asarray + float32 + concatenated rows": P8_HEAD
    + "    rows = np.concatenate([np.asarray(c_kv), k_rope], axis=1).astype(np.float32)\n"
    + "    q_lat = np.einsum('hd,hcd->hc', q_nope.astype(np.float32), w_uk.astype(np.float32))\n"
    + "    s = scale * (np.concatenate([q_lat, q_rope.astype(np.float32)], axis=1) @ rows.T)\n"
    + P8_SOFTMAX + "    o = p @ rows[:, :c_kv.shape[1]]\n"
    + "    return np.einsum('hc,hcd->hd', o, w_uv.astype(np.float32))\n",
}


for _name, _src in P8_LEGIT.items():
    attempt(8, "legit " + _name, _src)
for _name, _src in P8_EXPANDERS.items():
    attempt(8, "expander " + _name, _src)


@pytest.mark.parametrize("name", list(P8_LEGIT))
def test_p08_legit_absorbed_attempts_pass(graded, name):
    res = graded[(8, "legit " + name)]
    assert res.status is ProblemStatus.PASSED, res.first_failure().message if res.first_failure() else res.message


HAS_TORCH = runner.importlib.util.find_spec("torch") is not None
if HAS_TORCH:
    P8_TORCH = attempt(8, "legit torch", P8_HEAD.replace("import numpy as np", "import numpy as np, torch")
                       + "    t = lambda a: torch.from_numpy(a)\n"
                       "    q_lat = torch.einsum('hd,hcd->hc', t(q_nope), t(w_uk))\n"
                       "    s = scale * (q_lat @ t(c_kv).T + t(q_rope) @ t(k_rope).T)\n"
                       "    p = torch.softmax(s, dim=-1)\n"
                       "    return torch.einsum('hc,hcd->hd', p @ t(c_kv), t(w_uv)).float()\n")


    P8_TORCH_EXPANDER = attempt(8, "torch expander", P8_HEAD.replace("import numpy as np", "import numpy as np, torch")
                                + "    t = lambda a: torch.from_numpy(a).float()\n"
                                "    k = torch.einsum('tc,hcd->htd', t(c_kv), t(w_uk))\n"
                                "    v = torch.einsum('tc,hcd->htd', t(c_kv), t(w_uv))\n"
                                "    s = scale * (torch.einsum('hd,htd->ht', t(q_nope), k) + t(q_rope) @ t(k_rope).T)\n"
                                "    return torch.einsum('ht,htd->hd', torch.softmax(s, -1), v)\n")


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_p08_torch_expansion_is_rejected_too(graded):
    f = failure(graded[P8_TORCH_EXPANDER])
    assert f.case.name.startswith("expansion trap") and "materializes per-head keys" in f.message


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_p08_legit_torch_attempt_passes(graded):
    res = graded[P8_TORCH]
    assert res.status is ProblemStatus.PASSED, res.first_failure().message if res.first_failure() else res.message


@pytest.mark.parametrize("name", list(P8_EXPANDERS))
def test_p08_materializing_attempts_are_rejected(graded, name):
    f = failure(graded[(8, "expander " + name)])
    assert f.case.name.startswith("expansion trap")
    assert "materializes per-head keys or values" in f.message


P8_WRONG = [
    (P8_ABSORBED_SCORES.replace("scale *", "(1 / np.sqrt(q_nope.shape[1])) *") + P8_SOFTMAX + P8_ABSORBED_OUT,
     "scale 1/sqrt(d_nope)"),
    (P8_ABSORBED_SCORES.replace(" + q_rope @ k_rope.T", "") + P8_SOFTMAX + P8_ABSORBED_OUT, "no rope term"),
    (P8_ABSORBED_SCORES + "    p = np.exp(s)\n    p = p / p.sum(axis=-1, keepdims=True)\n" + P8_ABSORBED_OUT,
     "unstable softmax"),
    (P8_ABSORBED_SCORES + P8_SOFTMAX.replace("axis=-1", "axis=0") + P8_ABSORBED_OUT, "softmax over heads"),
    (P8_ABSORBED_SCORES + P8_SOFTMAX + "    return np.einsum('hc,hcd->hd', p @ c_kv, w_uv)[:, :-1]\n", None),
]
P8_KEYS = [attempt(8, f"wrong {k}", P8_HEAD + body) for k, (body, _) in enumerate(P8_WRONG)]


@pytest.mark.parametrize("key, mistake", list(zip(P8_KEYS, [m for _, m in P8_WRONG])))
def test_p08_wrong_attempts(graded, key, mistake):
    f = failure(graded[key])
    want = {m.name: m.message for m in p08_absorb_decode.MISTAKES}.get(mistake)
    assert f.mistake == want
    if mistake is None:
        assert "returned shape" in f.message and "[n_heads, d_v]" in f.message


P8_MUTATE = attempt(8, "mutates", P8_HEAD + "    c_kv *= 1.0\n    k_rope[:] = k_rope * 2\n"
                    + P8_ABSORBED_SCORES + P8_SOFTMAX + P8_ABSORBED_OUT)


def test_p08_input_mutation_is_reported(graded):
    # The inputs arrive read-only (a sealed memfd), so the first in-place write
    # raises where it is written; the verdict names that line, not a later diff.
    f = failure(graded[P8_MUTATE])
    assert f.reason is Reason.MUTATED_INPUT, f.reason
    assert "tried to change one of its input arrays in place" in f.message
    assert "line 4, in absorb_decode" in f.message, f.message
