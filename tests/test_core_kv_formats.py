"""FlashMLA's FP8 KV-cache formats (mlacourse.kv_formats): the byte counts FlashMLA's own
sources state (csrc/api/sparse_decode.h, tests/quant.py at 9241ae3), recomputed here from
the numbers those files write, not from the module's formula."""
import pytest

from mlacourse import cache
from mlacourse.kv_formats import FORMATS, MODEL1_FP8_SPARSE, V32_FP8_SPARSE


def test_bytes_per_token_as_flashmla_checks_them():
    # sparse_decode.h: "V3.2 style" 512 + 64*2 + (512/128)*4; "MODEL1 style" 448 + 64*2 + (448/64)*1 + 1
    assert V32_FP8_SPARSE.bytes_per_token == 512 + 64 * 2 + (512 // 128) * 4 == 656 == cache.fp8_mla_row_bytes()
    assert MODEL1_FP8_SPARSE.bytes_per_token == 448 + 64 * 2 + (448 // 64) * 1 + 1 == 584
    assert (V32_FP8_SPARSE.d_qk, MODEL1_FP8_SPARSE.d_qk) == (576, 512)
    assert (V32_FP8_SPARSE.n_scales, MODEL1_FP8_SPARSE.n_scales) == (4, 7)


@pytest.mark.parametrize("page", [1, 2, 61, 64])
def test_model1_blocks_are_padded_to_576_byte_multiples(page):
    # quant.py: size_per_block_padded = (block_size*bytes_per_token + 576-1) // 576 * 576
    want = (page * 584 + 575) // 576 * 576
    assert MODEL1_FP8_SPARSE.block_bytes(page) == want and want % 576 == 0 and want >= page * 584
    assert V32_FP8_SPARSE.block_bytes(page) == page * 656  # no padding required by the format
    assert MODEL1_FP8_SPARSE.block_bytes(64) == 37_440  # 64 * 584 = 37,376, rounded up to 65 * 576


def test_model1_is_two_planes_v32_is_one_row_per_token():
    # MODEL1: values of slot s at s * 576, its 8 scale bytes after the whole value plane
    assert MODEL1_FP8_SPARSE.token_offsets(3, 64) == {"values": 3 * 576, "scales": 64 * 576 + 3 * 8}
    assert V32_FP8_SPARSE.token_offsets(3, 64) == {"values": 3 * 656, "scales": 3 * 656 + 512}
    for f in FORMATS:
        last = f.token_offsets(63, 64)
        assert last["scales"] + f.n_scales * f.scale_bytes + f.pad_bytes <= f.block_bytes(64)


def test_bad_arguments():
    with pytest.raises(ValueError):
        MODEL1_FP8_SPARSE.block_bytes(0)
    with pytest.raises(ValueError):
        V32_FP8_SPARSE.token_offsets(64, 64)
