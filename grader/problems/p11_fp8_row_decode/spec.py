"""Problem 11: decode FlashMLA's 656-byte FP8 cache row (chapter 6)."""
from __future__ import annotations

import numpy as np

from grader.spec import Case, Edge, Problem, compare_arrays, load_mistakes, memo_twins
from mlacourse.fp8 import bf16_encode, pack_fp8_row, unpack_fp8_row

FN = "fp8_row_decode"

STATEMENT = r"""
Write `fp8_row_decode(rows)`: turn FlashMLA's FP8 KV-cache rows back into numbers.

`rows` is a `uint8` array `[n, 656]`; each row is one cached token of one layer:

| bytes | content |
|---|---|
| 0 .. 511 | the 512 latent values as **float8 e4m3fn** codes |
| 512 .. 527 | four **float32** scales, little-endian; scale k belongs to latents 128k .. 128k+127 |
| 528 .. 655 | the 64 rope values as **bfloat16**, little-endian |

e4m3fn: bit 7 is the sign, bits 6-3 the exponent E (bias 7), bits 2-0 the mantissa M.
`E > 0`: `(1 + M/8) * 2^(E - 7)`; `E == 0`: subnormal `(M/8) * 2^-6`. There are no
infinities; `0x7F` and `0xFF` are NaN. A latent's value is its decoded code **times** its
tile's scale.

Return float64 `[n, 576]`: the 512 dequantized latents, then the 64 rope values.

Checked against `mlacourse.fp8.unpack_fp8_row` with |got - expected| <= 1e-6 * |expected|
(float32 arithmetic is fine); NaN must be NaN. The visible cases include every e4m3 code;
hidden rows are packed from random latents whose tiles range from 1e-3 to 1e3.
"""

HINTS = [
    "Slice each row into its three parts first: rows[:, :512], rows[:, 512:528], "
    "rows[:, 528:].",
    "Reinterpret bytes with .view: rows[:, 512:528].copy().view('<f4') gives [n, 4] scales, "
    "rows[:, 528:].copy().view('<u2') gives [n, 64] bf16 bit patterns.",
    "bf16 -> float32: (bits.astype(np.uint32) << 16).view(np.float32).",
    "Decode e4m3 once for all 256 codes into a lookup table (sign, E = (c >> 3) & 15, "
    "M = c & 7), then table[codes]. Reshape the latents to [n, 4, 128] and multiply by "
    "scales[:, :, None].",
]


RTOL, ATOL = 1e-6, 0.0


D_LATENT, D_ROPE, TILE = 512, 64, 128

# the packer's scale rule, named so the cases stay the same bytes now that mlacourse.fp8 defaults to
# power-of-two scales: max|x| / 448 gives scales with mantissa bits, which a decoder must multiply in full
SCALES = "amax"


def reference(rows):
    return unpack_fp8_row(rows)  # [n, 576] float64


def _row(codes, scales, rope):
    """Assemble one row from 512 codes, 4 float32 scales and 64 rope values."""
    return np.concatenate([np.asarray(codes, np.uint8),
                           np.asarray(scales, "<f4").view(np.uint8),
                           bf16_encode(np.asarray(rope)).astype("<u2").view(np.uint8)])


def _packed(rng, n, tile_mags=None):
    """n rows packed by the core from random data; tile_mags sets each tile's size."""
    mags = np.asarray(tile_mags if tile_mags is not None else
                      10.0 ** rng.uniform(-3, 3, size=(n, D_LATENT // TILE)))
    latent = rng.standard_normal((n, D_LATENT // TILE, TILE)) * mags.reshape(n, -1, 1)
    latent[:, :, :3] = 0.0  # exact zeros and tiny values exercise code 0 and the subnormals
    latent[:, :, 3:8] *= 1e-3
    rope = rng.standard_normal((n, D_ROPE)) * 10.0 ** rng.uniform(-2, 2, size=(n, 1))
    return pack_fp8_row(latent.reshape(n, D_LATENT), rope, SCALES)


def _describe(rows, note, seed=None):
    return (f"rows [{', '.join(map(str, rows.shape))}] uint8, {note}"
           )


def make_cases(seed):
    fixed = np.random.default_rng(11)
    finite = np.array([c for c in range(256) if c not in (0x7F, 0xFF)], np.uint8)  # 254 codes
    every_code = np.concatenate([finite, finite[::-1], [0, 0x80, 0x08, 0x88]])      # 512 codes
    rope = np.array([1.0, -1.0, 0.5, -2.5, 3.140625, 1e-3, -7e4, 0.0] * 8)
    unit = _row(every_code, [1.0, 1.0, 1.0, 1.0], rope)
    scaled = _row(every_code, [1.0, 2.0 ** -10, 3.5, 1000.0], rope[::-1])
    nan_codes = every_code.copy()
    nan_codes[[5, 200, 300, 511]] = [0x7F, 0xFF, 0x7F, 0xFF]
    nan_row = _row(nan_codes, [1.0, 0.25, 8.0, 1.0], rope)
    packed = _packed(fixed, 2)
    cases = [
        Case("two rows packed from random latents", FN, {"rows": packed},
             describe=_describe(packed, "made by mlacourse.fp8.pack_fp8_row")),
        Case("every finite e4m3 code, scales 1", FN, {"rows": unit[None]},
             describe=_describe(unit[None], "codes 0x00-0xFE except 0x7F, all scales 1.0")),
        Case("every finite code, four different scales", FN, {"rows": scaled[None]},
             describe=_describe(scaled[None], "scales 1, 2^-10, 3.5, 1000")),
        Case("the NaN codes 0x7F and 0xFF", FN, {"rows": nan_row[None]},
             describe=_describe(nan_row[None], "latents 5, 200, 300, 511 are NaN codes")),
    ]
    rng = np.random.default_rng(seed)
    for i in range(4):
        rows = _packed(rng, 1 if i == 0 else int(rng.integers(1, 9)))
        cases.append(Case(f"random {i}", FN, {"rows": rows}, hidden=True, seed=seed,
                          describe=_describe(rows, "tile magnitudes 1e-3..1e3", seed)))
    return memo_twins(cases, rng, CHANGES, reference={FN: reference}, check=check)


# memo_twins: the same number of rows, packed from other latents (a cache keyed on n fails)
CHANGES = {"rows": lambda a, rng: _packed(rng, a["rows"].shape[0])}


def check(case, result):
    return compare_arrays(FN, reference(**case.args), result, rtol=RTOL, atol=ATOL,
                          dims="[n, 576] = [n, d_latent + d_rope]")


MISTAKES = load_mistakes(__file__)


def _codes(a):
    return np.asarray(a["rows"])[:, :D_LATENT]


EDGES = [
    Edge("a single row", lambda a: a["rows"].shape[0] == 1, kind="one"),
    Edge("exact zeros (codes 0x00, 0x80)", lambda a: bool(np.isin(_codes(a), [0x00, 0x80]).any()), kind="none"),
    Edge("subnormal e4m3 codes (exponent 0)", lambda a: bool((((_codes(a) & 0x78) == 0) & ((_codes(a) & 7) != 0)).any()),
         kind="limit"),
    Edge("the largest e4m3 magnitude (codes 0x7E, 0xFE: 448)", lambda a: bool(np.isin(_codes(a), [0x7E, 0xFE]).any()),
         kind="largest"),
]

PROBLEM = Problem(
    number=11, slug="fp8_row_decode", title="Decode an FP8 cache row",
    summary="FlashMLA's 656-byte FP8 row back to 576 floats",
    chapter="notebooks/06_decode_kernel.ipynb",
    functions=[FN], statement=STATEMENT, hints=HINTS,
    make_cases=make_cases, check=check, mistakes=MISTAKES,
    reference={FN: reference}, edges=EDGES,
    no_structure={
        "none first": "each byte decodes on its own: no running state",
        "order": "no ids or positions: the bytes' places are the format itself",
        "spread": "no softmax: tile scales from 1e-3 to 1e3 are decoded, never exponentiated",
        "ties": "no ranking or choice: each value is compared with a tolerance",
    },
    fixed={"rows.axis1": "a FlashMLA FP8 cache row is 656 bytes by definition: 512 e4m3 latents, "
                         "4 float32 scales, 64 bf16 rope values"},
)
