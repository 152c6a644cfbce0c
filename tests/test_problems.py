"""Every problem: model answers pass, stubs are "not started", stubs and answers have the
same signatures; and learner-style wrong attempts (made by editing one line of the model
answer) are rejected -- with the matching message when the slip is a known one, and
without any when it is not. (Every spec's own rules: tests/test_judge_specs.py; the
corpus of learner attempts and the named mistakes: tests/test_judge_corpus.py.)

Most checks run in-process (fast); one test per problem goes through the real judge
(a child process per problem), as a learner's run would."""
from __future__ import annotations

import copy
import json

import pytest

from grader import child, runner
from grader.records import CaseStatus, ProblemStatus

PROBLEMS = {p.number: p for p in runner.discover()}
NUMBERS = sorted(PROBLEMS)
SEEDS = [0, 1]  # tests/test_judge_sweeps.py runs the reference and the answers on many more


def _needs(problem):
    missing = runner.missing_requirements(problem)
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}")


def _params(numbers=NUMBERS):
    return [pytest.param(PROBLEMS[n], id=PROBLEMS[n].slug, marks=_needs(PROBLEMS[n]))
            for n in numbers]


def _plain(x):
    """The data round trip a child's result goes through (tuples stay tuples)."""
    return child.decode(json.loads(json.dumps(child.encode(x))))


def _solution(problem):
    return child.load_module(str(runner.SOLUTIONS / problem.filename), f"sol_{problem.slug}")


@pytest.mark.parametrize("problem", _params())
def test_solution_and_reference_pass_every_case(problem):
    sol = _solution(problem)
    for seed in SEEDS:
        cases = problem.make_cases(seed)
        assert any(c.hidden and c.seed == seed for c in cases), "hidden cases must record the seed"
        for c in cases:
            if seed != SEEDS[0] and not c.hidden:
                continue  # public cases do not change with the seed
            for name, fn in (("solution", getattr(sol, c.function)),
                             ("reference", problem.reference[c.function])):
                got = _plain(fn(**copy.deepcopy(c.args)))
                v = problem.check(c, got)
                assert v.passed, f"{name} fails {c.name!r} (seed {seed}): {v.message}"


def test_grading_is_deterministic_per_seed():
    p = PROBLEMS[10]
    a, b = p.make_cases(7), p.make_cases(7)
    for x, y in zip(a, b):
        assert x.describe == y.describe
        for k in x.args:
            assert json.dumps(child.encode(x.args[k])) == json.dumps(child.encode(y.args[k]))


# ------------------------------------------------------------------ through the judge

@pytest.mark.parametrize("problem", _params())
def test_judge_grades_solution_passed_and_stub_not_started(problem):
    res = runner.grade(problem, runner.SOLUTIONS / problem.filename, seed=3)
    assert res.status is ProblemStatus.PASSED, res.message or res.first_failure().message
    res = runner.grade(problem, runner.PRACTICE / problem.filename, seed=3)
    assert res.status is ProblemStatus.NOT_STARTED, (
        f"the judge calls the stub {problem.filename} {res.status.value}, not 'not started': every "
        f"function of a stub raises NotImplementedError. {res.message}")


# Learner-style attempts: the model answer with one edit. (old, new, words): `words` is a
# phrase of the mistake message the judge must attach, or None for a slip it does not
# know -- then no mistake message may be attached at all.
EDITS = {
    2: [("/ np.sqrt(d_nope + d_rope)", "/ np.sqrt(d_nope)", "1/sqrt(d_nope + d_rope)"),
        ("k_r = _rotate_pairs(k_rope, k_pos, theta)", "k_r = _rotate_pairs(k_rope, q_pos, theta)",
         "do not depend on position"),
        ("freqs = theta ** (-np.arange(0, d, 2) / d)", "freqs = theta ** (-np.arange(0, d, 2) / (d - 2))",
         None)],
    3: [("np.tril(np.ones((n_tok, n_tok), dtype=bool))", "np.triu(np.ones((n_tok, n_tok), dtype=bool))",
         "flipped"),
        ("scores = scores + np.einsum(\"shr,tr->hst\", q_rope, k_rope)", "pass", "q_rope . k_rope"),
        ("p = p / p.sum(axis=-1, keepdims=True)", "p = p / (p.sum(axis=-1, keepdims=True) + 0.01)",
         None)],
    5: [("top = np.where(np.isneginf(top), 0.0, top)", "top = np.zeros_like(top)", "overflows"),
        ("    return out, lse", "    return out, lses.max(axis=0)", "largest part's lse"),
        ("    return out, lse", "    return out, lse + 1e-3", None)],
    6: [("scale, causal=True)", "scale, causal=False)", "causal mask"),
        ("for lo in range(0, n_prefix, chunk):", "for lo in range(0, n_prefix - chunk + 1, chunk):",
         "last prefix chunk"),
        ("hi = min(lo + chunk, n_prefix)", "hi = min(lo + chunk + 1, n_prefix)", None)],
    7: [("nbytes = rows * d_k * BF16 + s_k * _row_bytes(kv_dtype) + rows * d_v * BF16",
         "nbytes = s_k * _row_bytes(kv_dtype)", "query read"),
        ("return D_LATENT * 1 + n_scales * 4 + D_ROPE * BF16", "return D_LATENT * 1 + D_ROPE",
         "656 bytes"),
        ("bandwidth = g.hbm_gbps * 1e9", "bandwidth = g.hbm_gbps * 2**30", None)],  # GiB, not GB
    9: [("pages = block_table[seq, tokens // page]", "pages = np.sort(block_table[seq])[tokens // page]",
         "sorted the block table"),
        ("return kv_cache[pages, slots]", "return kv_cache[pages, slots][::-1]", None)],
    10: [("out = (weights[..., None] * o_parts).sum(axis=0)", "out = o_parts.mean(axis=0)",
          "averaged"),
         ("return (p @ rows[:, :d_v])", "return (p @ rows[:, -d_v:])", "FIRST d_v dims"),
         ("s = scale * (q @ rows.T)", "s = 0.5 * scale * (q @ rows.T)", None)],
    11: [("value = np.where((c & 0x7F) == 0x7F, np.nan, value)", "value = value", "are NaN"),
         ("rope = (rope_bits.astype(np.uint32) << 16).view(np.float32)",
          "rope = rope_bits.view(np.float16)", "bfloat16"),
         ("np.ldexp(mantissa / 8, -6)", "np.ldexp(mantissa / 8, -7)", None)],
    12: [("        s = tl.where(valid[None, :], s, float(\"-inf\"))     # padding rows get no weight\n",
          "", "padding rows"),
         ("        alpha = tl.exp(m - m_new)", "        alpha = tl.full([H], 1.0, tl.float32)",
          "alpha = exp(m_old - m_new)"),
         ("    out = acc / tl.where(seen, l, 1.0)[:, None]", "    out = acc / (l[:, None] + 1.0)", None)],
}


def _edit_params():
    out = []
    for n, edits in EDITS.items():
        for i, (old, new, words) in enumerate(edits):
            marks = [_needs(PROBLEMS[n])] + ([pytest.mark.slow] if n == 12 else [])
            out.append(pytest.param(n, old, new, words, id=f"p{n:02d}-{words or 'unnamed'}-{i}",
                                    marks=marks))
    return out


@pytest.mark.parametrize("number, old, new, words", _edit_params())
def test_learner_style_wrong_attempts(tmp_path, number, old, new, words):
    problem = PROBLEMS[number]
    src = (runner.SOLUTIONS / problem.filename).read_text()
    assert src.count(old) == 1, f"edit anchor not found once in {problem.filename}: {old!r}"
    path = tmp_path / problem.filename
    path.write_text(src.replace(old, new))
    res = runner.grade(problem, path, seed=5)
    f = res.first_failure()
    assert res.status is ProblemStatus.FAILED and f is not None and f.status is CaseStatus.FAIL, (
        res.status, res.message)
    named = f.mistake
    if words is None:
        assert not named, f"a correct-looking slip was given a mistake message: {named}"
    else:
        assert named and words in named, f"expected a message about {words!r}; got {named!r}\n{f.message}"


def test_p06_whole_prefix_expansion_hits_the_memory_cap(tmp_path):
    path = tmp_path / "p06_chunked_extend.py"
    src = (runner.SOLUTIONS / "p06_chunked_extend.py").read_text()
    # the learner's shortcut: one chunk as long as the whole prefix
    path.write_text(src.replace("def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):\n",
                                "def chunked_extend(q_nope, q_rope, c_kv, k_rope, w_uk, w_uv, scale, chunk):\n"
                                "    chunk = max(1, c_kv.shape[0])\n"))
    res = runner.grade(PROBLEMS[6], path, seed=5)
    fails = [o for o in res.outcomes if o.status is not CaseStatus.PASS]
    assert [o.case.name for o in fails] == ["a 40,000-row prefix under a 10 MB memory cap"]
    assert "expanding the whole prefix at once" in fails[0].message


def test_p09_reading_an_unused_table_entry_fails(tmp_path):
    path = tmp_path / "p09_paged_gather.py"
    path.write_text(
        "import numpy as np\n\ndef paged_gather(kv_cache, block_table, cache_seqlens, seq):\n"
        "    n, page = int(cache_seqlens[seq]), kv_cache.shape[1]\n"
        "    pages = [kv_cache[block_table[seq, j]] for j in range(n // page + 1)]\n"
        "    return np.concatenate(pages)[:n]\n")
    res = runner.grade(PROBLEMS[9], path, seed=5)
    f = res.first_failure()
    assert f is not None and f.case.name == "exactly two full pages"
    assert "IndexError" in f.message and "2147483647" in f.message


def test_p09_nan_rows_get_an_explanation():
    p = PROBLEMS[9]
    case = next(c for c in p.make_cases(0) if "all-NaN page" in c.name)
    import numpy as np
    a = case.args
    got = np.asarray(p.reference["paged_gather"](**a)).copy()
    got[-1] = np.nan
    v = p.check(case, got)
    assert not v.passed and "must not look" in v.message


def test_p07_statement_lists_every_gpu():
    from mlacourse.hardware import GPUS
    st = PROBLEMS[7].statement
    assert all(f"`{name}`" in st for name in GPUS)


@pytest.mark.smoke
def test_stub_signatures_match_solutions():
    import inspect
    for n in NUMBERS:
        p = PROBLEMS[n]
        if runner.missing_requirements(p):
            continue
        stub = child.load_module(str(runner.PRACTICE / p.filename), f"stub_{p.slug}")
        sol = _solution(p)
        for fn in p.functions:
            assert inspect.signature(getattr(stub, fn)) == inspect.signature(getattr(sol, fn)), fn


def test_specs_import_without_torch():
    """The specs run in the browser too (no torch there): importing them must not pull it in."""
    import subprocess
    import sys
    mods = ", ".join(f"grader.problems.{PROBLEMS[n].stem}.spec" for n in NUMBERS)
    code = f"import sys; import {mods}; assert 'torch' not in sys.modules and 'triton' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=runner.ROOT, check=True, timeout=120)
