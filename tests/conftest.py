"""Shared test setup.

Without a CUDA GPU the Triton kernels run in Triton's CPU interpreter. The variable
must be set before triton is first imported, which is why it lives here."""
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


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (none found)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


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
