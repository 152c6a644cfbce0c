"""The course's MLA decode kernels, their torch reference, reports and benchmark.

  mla_decode       mla_decode_with_kvcache: versions naive -> tiled -> splitkv -> planned (Triton)
                   and gluon, seesaw (Hopper, Gluon); the one table of versions and what each can do
                   (VERSION_TABLE)
  tiles            the device helpers the Triton versions share
  launch           a checked call, one kernel launch, the launch defaults a GPU ships
  gluon_decode     version 5 in Gluon: compiled for sm_90, not yet run on a GPU
  seesaw_decode    version 6 in Gluon, FlashMLA's seesaw: compiled for sm_90, not yet run on a GPU
  sparse_decode    version 7: sparse decode (DeepSeek-V3.2's top-k indices) over FP8 rows
  mla_prefill      the expand path's prefill (chapter 9): versions prefill_tiled -> prefill_causal, PREFILL_TABLE
  prefill_context  the chunked prefix context: expansion from the paged latent cache, chunk loop, LSE merge
  sparse_prefill   the absorbed sparse prefill (FlashMLA's flash_mla_sparse_fwd call) on version 7's kernel
  plan             mla_decode_plan: the batch's schedule on the device (like FlashMLA's get_mla_metadata)
  dims             the model dimensions, LOG2E and the page rule, named once (no torch)
  engine_adapter   the engine's decode through the kernel: Engine(..., decode_backend=kernel_backend())
  reference        the float64 and GPU-like references, FlashMLA's tolerances, `compare` (a record)
  fp8              FlashMLA's FP8 cache layouts (V3.2's 656-byte row, MODEL1's), packed and unpacked in torch
  compile_report   python -m kernels.compile_report: sm_90 resources and the SASS of the KV loop
  schedule_report  python -m kernels.schedule_report: per-SM work and modelled HBM traffic
  triton36         python -m kernels.triton36 --install: the GPU machine's triton, for compile checks
  bench            python kernels/bench.py --out RUN.md  (needs a CUDA GPU; --smoke on a CPU)
  bench_sparse     python kernels/bench_sparse.py --out RUN.md  (the sparse kernel; --smoke: the gate on a CPU)
  bench_prefill    python kernels/bench_prefill.py --out RUN.md  (prefill; --smoke: the gate on a CPU)
  gpu_check.sh     bash kernels/gpu_check.sh: every GPU check in one command (--dry-run on a CPU)

This package is named like a PyPI package (`kernels`); import it from the repository
root, which must come first on sys.path (pytest.ini does that for the tests)."""
