"""The secret that picks the hidden cases.

A run's seed is 128 random bits (``draw``): a student who sees every hidden input of a
graded run cannot search the seed space for the one that made them (2**128 seeds; at
40,000 seeds a second that is ~10**26 years), so a re-grade with the same seed is not
known in advance. The learner's own judge prints the seed to rerun a failing case;
``python -m classroom grade --hide-seed`` and Gradescope show it nowhere.

Each problem draws its cases from a stream of its own, ``for_problem(seed, number)``: a
hash of the run's seed and the problem's number, so the cases of one problem say nothing
about another's, and a spec never sees the run's seed itself. Specs may record the
stream they were given (``Case.seed``) but never print it: whatever a student or a class
discussion sees is the report's to decide (grader/report.py).
"""
from __future__ import annotations

import hashlib
import secrets

BITS = 128
LIMIT = 2 ** 256          # seeds given by hand (--seed, a seed file) may be up to 256 bits
_DOMAIN = b"mla-course hidden cases v1\0"


def draw() -> int:
    """A fresh run seed: 128 bits from the operating system's random source."""
    return secrets.randbits(BITS)


def for_problem(seed: int, number: int) -> int:
    """The stream of problem ``number`` in the run with ``seed`` (a 128-bit integer that
    ``np.random.default_rng`` takes): SHA-256 of the domain, the seed and the number."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < LIMIT:
        raise ValueError(f"a seed is an integer in [0, 2**256), not {seed!r}")
    digest = hashlib.sha256(_DOMAIN + seed.to_bytes(32, "big") + int(number).to_bytes(4, "big")).digest()
    return int.from_bytes(digest[:BITS // 8], "big")


def parse(text: str, where: str) -> int:
    """A seed written by hand or read from a file (decimal, or 0x... hex), checked."""
    try:
        value = int(str(text).split()[0], 0)
    except (ValueError, IndexError):
        raise ValueError(f"{where}: expected an integer seed, got {str(text)[:40]!r}") from None
    if not 0 <= value < LIMIT:
        raise ValueError(f"{where}: the seed must be an integer between 0 and 2**256 - 1")
    return value


def weak(seed: int) -> bool:
    """True for a seed small enough to be found by trying them all (under 2**64): the
    teacher is warned, since a class could search for it from the hidden inputs it sees."""
    return seed < 2 ** 64


__all__ = ["BITS", "draw", "for_problem", "parse", "weak"]
