"""CONTRIBUTING.md's "A new kernel version", enforced (tests/kernel_checklist.py).

Every real version passes every step. A fake version -- version 2's launcher under another
name, registered in the table by a fixture -- fails with one named message per step its
author has not done yet, and passes once the documents have its rows. Each step the table
does for the author (the row's truth, the reference check, the compile report's entry,
gpu_check.sh's selection) is shown failing on the slip it exists for. Nothing is compiled;
the reference runs of step 2 use Triton's interpreter on a tiny case."""
import dataclasses
import re

import pytest

from kernels import mla_decode as md
from tests import kernel_checklist as K


def _fake_launch(call):
    """Version 2's launches, labelled as the new version's (what a copied launcher must do)."""
    return [dataclasses.replace(lc, label=lc.label.replace("tiled", "fake", 1)) for lc in md._launch_tiled(call)]


@pytest.fixture
def register(monkeypatch):
    """register(**row): put a version 8, "fake", in the one table (and VERSIONS) for this test."""
    def put(launch=_fake_launch, **fields):
        v = md.Version(**{"number": 8, "name": "fake", "launch": launch,
                          "summary": "version 2 under another name (a fixture)", **fields})
        monkeypatch.setitem(md.VERSION_TABLE, "fake", v)
        monkeypatch.setattr(md, "VERSIONS", tuple(n for n, w in md.VERSION_TABLE.items() if w.call == "dense"))
        return v
    return put


@pytest.mark.parametrize("name", list(md.VERSION_TABLE))
def test_every_version_has_done_every_step(name):
    """Step 2 (its run against float64) is tests/test_kernels.py's for the real versions."""
    assert K.problems(name, run=False) == []


def test_a_fake_version_fails_each_forgotten_step_until_its_checklist_is_done(register):
    v = register()
    docs = K.Docs.read()
    found = K.problems("fake", docs)
    assert K.steps_of(found) == {3, 4, 5, 6}, "\n".join(found)  # the table did 1, 2 and 7 for it
    expected = [
        ("step 3 (the compile report): kernels/BENCHMARKS.md records no sm_90 compile of 'fake bf16'",
         lambda d: dataclasses.replace(d, benchmarks=d.benchmarks + "\n| fake bf16 BLOCK_M=16 | 16 x 32 |\n")),
        ("step 3 (the compile report): kernels/BENCHMARKS.md records no sm_90 compile of 'fake fp8'",
         lambda d: dataclasses.replace(d, benchmarks=d.benchmarks + "\n| fake fp8 BLOCK_M=16 | 16 x 16 |\n")),
        ("step 4 (kernels/BENCHMARKS.md): no row `| 8 | `fake` | ... |`",
         lambda d: dataclasses.replace(d, benchmarks=d.benchmarks + "| 8 | `fake` | not measured yet |\n")),
        ("step 5 (kernels/README.md and the header): no row `| 8 | `fake` | ... |`",
         lambda d: dataclasses.replace(d, readme=d.readme + f"| 8 | `fake` | as tiled | once | - | {v.status} |\n")),
        ("step 5 (kernels/README.md and the header): kernels/mla_decode.py's header does not name "
         '`8 "fake"`', lambda d: dataclasses.replace(d, header=d.header + '\n  8 "fake"     version 2, renamed\n')),
        ("step 6 (chapter 6): chapter 6's VERSIONS list",
         lambda d: dataclasses.replace(d, chapter6=re.sub(r'^VERSIONS = \[', 'VERSIONS = ["fake", ', d.chapter6,
                                                           flags=re.M))),
    ]
    assert len(found) == len(expected), "\n".join(found)
    for message, do_it in expected:
        assert any(p.startswith(message) for p in found), (message, found)
        docs = do_it(docs)  # the newcomer does this step ...
        found = K.problems("fake", docs, run=False)
        assert not any(p.startswith(message) for p in found), (message, found)  # ... and its message goes
    assert found == []


def test_a_row_that_claims_what_the_launcher_does_not_fails_step_1(register):
    def no_fp8(call):  # a launcher that reads bf16 rows only, in a row that says it reads FP8 too
        if call.is_fp8:
            raise ValueError("bf16 only")
        return _fake_launch(call)
    register(launch=no_fp8)
    found = K.problems("fake", K.Docs.read(), run=False)
    assert any(p.startswith("step 1 (the kernel, its launcher, its row): its row says it reads fp8 caches, its "
                            "launcher refused") for p in found), found
    register(block_m=(64,))  # ships 16- and 32-row tiles too
    found = K.table_row(md.VERSION_TABLE["fake"])
    assert any("at h_q=16 (bf16) its launcher builds BLOCK_M=16, not in its row's block_m=(64,)" in p
               for p in found), found
    register(block_m=(16, 32, 64, 1))  # says one row per program too
    assert any("block_m=(16, 32, 64, 1) has [1], which no call builds" in p
               for p in K.table_row(md.VERSION_TABLE["fake"]))
    register(takes_plan=True)  # version 2's launcher takes no plan
    assert any("its row says it takes plan=, its launcher refused: TypeError: unknown option(s)" in p
               for p in K.table_row(md.VERSION_TABLE["fake"]))

    def pages_of_64(call):
        if call.page < 64:
            raise ValueError("a tile of 64 keys must lie in one page")
        return _fake_launch(call)
    register(launch=pages_of_64)  # min_page=16 in its row
    assert any("its row says it takes pages of 16, its launcher refused" in p
               for p in K.table_row(md.VERSION_TABLE["fake"]))
    register(hopper_only=True)  # still says interpreter=True
    assert any("hopper_only=True with interpreter=True" in p for p in K.table_row(md.VERSION_TABLE["fake"]))
    register(number=2)
    assert any("number 2 is another version's too" in p for p in K.table_row(md.VERSION_TABLE["fake"]))
    register(dot_operands="bf16")  # the GPU-like reference would not know where it rounds
    assert any("dot_operands='bf16'" in p for p in K.table_row(md.VERSION_TABLE["fake"]))


def test_what_a_row_leaves_out_is_refused_before_the_launcher_runs(register):
    """A row that says less than its launcher can do is made true by prepare, which checks every
    call against the row: the launcher never sees what its row leaves out."""
    register(caches=("bf16",), dtypes=("bfloat16",), min_page=64, batch_invariant=False)
    v = md.VERSION_TABLE["fake"]
    assert K.table_row(v) == []
    for kw, match in ((dict(cache="fp8"), "reads bf16 caches only"), (dict(dtype="float16"), "needs bfloat16 q"),
                      (dict(page=32), "page_block_size >= 64"), (dict(batch_invariant=True), "batch_invariant")):
        with pytest.raises((ValueError, TypeError), match=match):
            K.build(v, **{"cache": "bf16", **kw})


def test_a_launcher_that_computes_wrong_fails_step_2(register):
    def wrong_scale(call):
        call.qk_scale_log2 *= 1.5  # a slip: the softmax scale applied twice over
        return _fake_launch(call)
    register(launch=wrong_scale, caches=("bf16",))
    found = K.against_reference(md.VERSION_TABLE["fake"])
    # the GPU-like reference passes (the references are right); the kernel fails against both of them
    assert found and found[0].startswith("step 2 (tests): out (")
    assert "vs float64 fake, bf16 cache: MISMATCH" in found[0], found[0]
    assert any("vs GPU-like reference fake, bf16 cache: MISMATCH" in f for f in found), found
    register(caches=("bf16",))  # the right launcher passes
    assert K.against_reference(md.VERSION_TABLE["fake"]) == []


def test_a_mislabelled_launcher_fails_step_3(register):
    register(launch=md._launch_tiled)  # copied launcher still labels its launches "tiled ..."
    found = K.compile_report(md.VERSION_TABLE["fake"], K.Docs.read())
    assert any("builds no 'fake bf16 ...' configuration" in p for p in found), found


def test_gpu_check_with_a_list_of_names_fails_step_7(register):
    register()
    docs = K.Docs.read()
    assert K.gpu_check(md.VERSION_TABLE["fake"], docs) == []  # "--versions portable" takes it
    listed = docs.gpu_check.replace("--versions portable,", "--versions naive,tiled,splitkv,planned,")
    assert listed != docs.gpu_check
    found = K.gpu_check(md.VERSION_TABLE["fake"], dataclasses.replace(docs, gpu_check=listed))
    assert found and found[0].startswith("step 7 (on a GPU): no GPU bench step")


def test_gpu_check_runs_the_matrix_of_every_version():
    """Its test steps run the gpu_check selection (pytest -m gpu_check), whose case matrix
    (tests/gpu_check.py) is made from the version table's rows: a new version is run on the GPU,
    in the step its row says, without editing the script; its bench steps choose versions by the
    words portable and hopper."""
    from tests import gpu_check as G
    script = K.Docs.read().gpu_check
    steps = {m.group(1): m.group(2) for m in re.finditer(r'^run (\w[\w-]*) .*"\$\{PYTEST\[@\]\}" (.*)$', script, re.M)}
    assert "-m gpu_check" in script and set(steps) == {"tests", "hopper", "sparse", "prefill"}, steps
    for step, test in (("tests", "test_dense"), ("hopper", "test_hopper"), ("sparse", "test_sparse"),
                       ("prefill", "test_prefill")):
        assert f"tests/test_kernel_gpu_matrix.py::{test}" in steps[step]
    for name, v in md.VERSION_TABLE.items():
        mine = [c for c in G.cases() if c.version == name]
        assert {c.cache for c in mine} == set(v.caches) and {G.step_of(v)} == {G.step_of(md.VERSION_TABLE[c.version])
                                                                             for c in mine}, name
    assert K.bench_steps(script) == ["portable,torch,flashmla", "hopper"]
    from tests import gpu_check_prefill as P  # the prefill rows: the same, from PREFILL_TABLE
    for name, v in mp.PREFILL_TABLE.items():
        assert {c.cache for c in P.cases() if c.version == name} == set(v.caches), name
    assert re.search(r"^ *run prefill-bench .*kernels/bench_prefill\.py --quick", script, re.M)  # every expand row


def test_contributing_numbers_and_names_the_same_steps():
    text = (K.ROOT / "CONTRIBUTING.md").read_text()
    section = text.split("## A new kernel version", 1)[1].split("\n## ", 1)[0]
    numbered = re.findall(r"^(\d+)\. \*\*(.+?)[.:]?\*\*", section, re.M)
    assert [(int(n), t.lower()) for n, t in numbered] == [(n, t.lower()) for n, t in K.STEPS.items()], numbered


# ---- the prefill versions (kernels/mla_prefill.py's PREFILL_TABLE): the same steps, 1-5 ----------------

from kernels import mla_prefill as mp  # noqa: E402

PREFILL_TILED = mp.PREFILL_TABLE["prefill_tiled"]


def _fake_prefill_launch(call):
    """Version 1's launches, labelled as the new prefill version's."""
    return [dataclasses.replace(lc, label=lc.label.replace("prefill_tiled", "prefill_fake", 1))
            for lc in mp._launch_tiled(call)]


@pytest.fixture
def register_prefill(monkeypatch):
    """register_prefill(**row): put a version 9, "prefill_fake", in the prefill table for this test."""
    def put(launch=_fake_prefill_launch, **fields):
        row = {"number": 9, "name": "prefill_fake", "launch": launch, "summary": "version 1 under another name",
               "block_m": PREFILL_TILED.block_m, **fields}
        v = mp.PrefillVersion(**row)
        monkeypatch.setitem(mp.PREFILL_TABLE, "prefill_fake", v)
        monkeypatch.setattr(mp, "EXPAND_VERSIONS", tuple(n for n, w in mp.PREFILL_TABLE.items() if w.call == "expand"))
        return v
    return put


@pytest.mark.parametrize("name", list(mp.PREFILL_TABLE))
def test_every_prefill_version_has_done_every_step(name):
    """Step 2 (against the references) is its own tests' (tests/test_kernel_prefill.py, _sparse_prefill.py)."""
    assert K.prefill_problems(name, run=False) == []


def test_a_fake_prefill_version_fails_each_forgotten_step_until_its_checklist_is_done(register_prefill):
    v = register_prefill()
    docs = K.Docs.read()
    found = K.prefill_problems("prefill_fake", docs)
    assert K.steps_of(found) == {3, 4, 5}, "\n".join(found)  # its row and launcher (1) and its results (2) are right
    expected = [
        ("step 3 (the compile report): kernels/BENCHMARKS.md records no sm_90 compile of 'prefill_fake bf16'",
         lambda d: dataclasses.replace(d, benchmarks=d.benchmarks + "\n| prefill_fake bf16 BLOCK_M=64 | 64 x 64 |\n")),
        ("step 4 (kernels/BENCHMARKS.md): no row `| 9 | `prefill_fake` | ... |`",
         lambda d: dataclasses.replace(d, benchmarks=d.benchmarks + "| 9 | `prefill_fake` | not measured yet |\n")),
        ("step 5 (kernels/README.md and the header): no row `| 9 | `prefill_fake` | ... |`",
         lambda d: dataclasses.replace(d, readme=d.readme + f"| 9 | `prefill_fake` | as 1 | all | {v.status} |\n")),
        ("step 5 (kernels/README.md and the header): kernels/mla_prefill.py's header does not name `9 "
         '"prefill_fake"`', lambda d: dataclasses.replace(d, prefill_header=d.prefill_header
                                                         + '\n  9 "prefill_fake"  version 1, renamed\n')),
    ]
    assert len(found) == len(expected), "\n".join(found)
    for message, do_it in expected:
        assert any(p.startswith(message) for p in found), (message, found)
        docs = do_it(docs)
        found = K.prefill_problems("prefill_fake", docs, run=False)
        assert not any(p.startswith(message) for p in found), (message, found)
    assert found == []


def test_a_prefill_row_that_claims_what_its_launcher_does_not_fails_step_1(register_prefill):
    register_prefill(pipelined=True)  # version 1 ships one stage
    assert any("pipelined=True, but its launch ships num_stages=1" in p
               for p in K.prefill_table_row(mp.PREFILL_TABLE["prefill_fake"]))
    register_prefill(block_m=(128,))
    assert any("builds BLOCK_M=64, not in its row's block_m=(128,)" in p
               for p in K.prefill_table_row(mp.PREFILL_TABLE["prefill_fake"]))
    register_prefill(dtypes=("bfloat16",))  # prepare refuses fp16 then: the row is made true
    assert K.prefill_table_row(mp.PREFILL_TABLE["prefill_fake"]) == []
    register_prefill(caches=("bf16", "fp8"))  # the expand path reads no FP8 rows
    assert any("its row says it reads fp8 rows, its launcher refused" in p
               for p in K.prefill_table_row(mp.PREFILL_TABLE["prefill_fake"]))
    register_prefill(causal_tiles="some")
    assert any("causal_tiles='some'" in p for p in K.prefill_table_row(mp.PREFILL_TABLE["prefill_fake"]))
    register_prefill(number=2)
    assert any("number 2 is another prefill version's too" in p
               for p in K.prefill_table_row(mp.PREFILL_TABLE["prefill_fake"]))


def test_a_prefill_launcher_that_computes_wrong_fails_step_2(register_prefill):
    def wrong_scale(call):
        call.qk_scale_log2 *= 1.5
        return _fake_prefill_launch(call)
    register_prefill(launch=wrong_scale)
    found = K.prefill_against_reference(mp.PREFILL_TABLE["prefill_fake"])
    assert found and all(p.startswith("step 2 (tests): ") for p in found)
    assert any("vs float64 prefill_fake, bf16: MISMATCH" in p for p in found), found
    register_prefill()
    assert K.prefill_against_reference(mp.PREFILL_TABLE["prefill_fake"]) == []


def test_a_mislabelled_prefill_launcher_fails_step_3(register_prefill):
    register_prefill(launch=mp._launch_tiled)  # still labels its launches "prefill_tiled ..."
    found = K.prefill_compile_report(mp.PREFILL_TABLE["prefill_fake"], K.Docs.read())
    assert any("builds no 'prefill_fake bf16 ...' configuration" in p for p in found), found
