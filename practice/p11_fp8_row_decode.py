"""Problem 11 - fp8_row_decode: FlashMLA's 656-byte FP8 row back to 576 floats.

Chapter: notebooks/06_decode_kernel.ipynb
Check your answer: python practice/judge.py 11     (hints: python practice/judge.py 11 --hint)
The whole statement: python practice/judge.py 11 --statement
"""
import numpy as np


def fp8_row_decode(rows):
    """uint8 rows [n, 656] -> float64 [n, 576] (512 dequantized latents, then 64 rope values).

    bytes   0..511  latents as float8 e4m3fn codes (sign, 4 exponent bits with bias 7,
                    3 mantissa bits; exponent 0 is subnormal; 0x7F and 0xFF are NaN)
    bytes 512..527  four little-endian float32 scales; scale k multiplies latents 128k..128k+127
    bytes 528..655  64 little-endian bfloat16 rope values
    """
    # TODO(problem 11): slice the three parts, decode e4m3 and bf16, multiply by the tile scales.
    raise NotImplementedError("problem 11 (fp8_row_decode) is not written yet")
