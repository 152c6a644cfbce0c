"""The course's Triton MLA decode kernel, its torch reference and its benchmark.

  mla_decode   mla_decode_with_kvcache: versions naive -> tiled -> splitkv, bf16/fp16 or FP8 cache
  reference    the float64/float32 torch reference the tests and the benchmark compare with
  fp8          FlashMLA's 656-byte FP8 cache row, packed and unpacked in torch
  bench        python kernels/bench.py  (needs a CUDA GPU)

This package is named like a PyPI package (`kernels`); import it from the repository
root, which must come first on sys.path (pytest.ini does that for the tests)."""
