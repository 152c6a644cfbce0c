"""Shared test setup.

Without a CUDA GPU the Triton kernels run in Triton's CPU interpreter. The variable
must be set before triton is first imported, which is why it lives here.

Tests marked `slow` (the real-browser run of the site, the corpus of learner attempts
through the judge, the sm_90 compiles, a release's setup from its zip) run in CI
(`CI=true`, set by .ci/run) and with `python -m pytest --run-slow`; otherwise they are
skipped, and the skip says how to run them. GPU tests skip without a CUDA GPU."""
import os
import shutil

import pytest


def _has_cuda() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


HAS_CUDA = _has_cuda()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true",
                     help="also run the tests marked slow (CI runs them: CI=true)")


def run_slow(config) -> bool:
    return config.getoption("--run-slow") or os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (none found)")
    skip_slow = pytest.mark.skip(reason="slow: CI runs it; here `python -m pytest --run-slow`")
    slow = run_slow(config)
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)
        elif "slow" in item.keywords and not slow:
            item.add_marker(skip_slow)


def pytest_terminal_summary(terminalreporter):
    """Print how long each chapter took to execute (informational, not asserted)."""
    import sys
    module = sys.modules.get("tests.test_notebooks")  # only when the notebook tests ran
    EXECUTION_TIMES = getattr(module, "EXECUTION_TIMES", None)
    if EXECUTION_TIMES:
        terminalreporter.section("chapter execution times")
        for name, seconds in sorted(EXECUTION_TIMES.items()):
            terminalreporter.write_line(f"{name:45s} {seconds:6.1f} s")
        terminalreporter.write_line(f"{'total':45s} {sum(EXECUTION_TIMES.values()):6.1f} s")
