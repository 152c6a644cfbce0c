"""For tests that grade untrusted code: they need the OS sandbox (bubblewrap).

On a learner's machine without it they skip and say how to get it; in CI (CI=true) they
fail instead -- the sandbox is what they test, so CI must have it (.ci/run installs it)."""
import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_sandbox():
    from grader import jail
    why = jail.probe()
    if why is None:
        return
    if in_ci():
        pytest.fail(f"CI must run the sandbox tests, but {why}: {jail.INSTALL_HINT}", pytrace=False)
    pytest.skip(f"needs the OS sandbox: {why} ({jail.INSTALL_HINT})")
