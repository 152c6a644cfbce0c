"""The run's secret seed (grader/seeds.py): 128 bits drawn, a stream per problem, parsed with checks."""
import hashlib

import pytest

from grader import seeds


def test_draw_is_128_bits_and_fresh():
    drawn = [seeds.draw() for _ in range(64)]
    assert len(set(drawn)) == 64
    assert all(0 <= s < 2 ** 128 for s in drawn)
    assert max(drawn) >= 2 ** 120, "64 draws of 128 bits all below 2**120: not 128 bits"


def test_each_problem_has_its_own_stream():
    seed = 12345
    streams = {n: seeds.for_problem(seed, n) for n in range(1, 19)}
    assert len(set(streams.values())) == 18
    assert all(0 <= s < 2 ** 128 for s in streams.values())
    assert seeds.for_problem(seed, 4) == seeds.for_problem(seed, 4)        # reproducible
    assert seeds.for_problem(seed + 1, 4) != seeds.for_problem(seed, 4)
    # written out, so that the derivation is the documented one and not the code's echo
    digest = hashlib.sha256(b"mla-course hidden cases v1\0" + seed.to_bytes(32, "big") + (4).to_bytes(4, "big"))
    assert seeds.for_problem(seed, 4) == int.from_bytes(digest.digest()[:16], "big")


@pytest.mark.parametrize("bad", [-1, 2 ** 256, 1.5, True, "7"])
def test_for_problem_refuses_what_is_not_a_seed(bad):
    with pytest.raises(ValueError):
        seeds.for_problem(bad, 1)


def test_parse():
    assert seeds.parse("  42\n", "x") == 42
    assert seeds.parse("0xff", "x") == 255
    big = 2 ** 200 + 3
    assert seeds.parse(str(big), "x") == big
    for bad in ("", "seven", "-3", str(2 ** 256)):
        with pytest.raises(ValueError, match="f.txt"):
            seeds.parse(bad, "f.txt")
    assert seeds.weak(2 ** 31) and not seeds.weak(2 ** 100)
