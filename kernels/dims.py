"""The absorbed-MLA decode dimensions and constants, named once for kernels/.

DeepSeek-V3's latent cache row: 512 latent dims (also the value) + 64 rope dims."""
import math

from mlacourse.config import DEEPSEEK_V3

D_LATENT = DEEPSEEK_V3.d_latent  # 512: the latent c_KV, K's first part and all of V
D_ROPE = DEEPSEEK_V3.d_rope  # 64: the decoupled rope key
D_K = D_LATENT + D_ROPE  # 576: one cached row, the absorbed query's width
D_V = D_LATENT  # 512: the output's width
FP8_TILE = 128  # latent values per float32 scale in FlashMLA's FP8 row
FP8_ROW_BYTES = D_LATENT + 4 * (D_LATENT // FP8_TILE) + 2 * D_ROPE  # 656: codes, scales, bf16 rope
BF16_ROW_BYTES = 2 * D_K  # 1152
LOG2E = math.log2(math.e)  # softmax runs in base 2: exp(x) = exp2(x * LOG2E)
PAGE_MIN, PAGE_MAX = 16, 256  # page_block_size of the dense call: a power of two in this range


def check_page_block_size(page: int, what: str = "page_block_size") -> None:
    """The dense kernels' page rule (FlashMLA's pages are 64 tokens): a power of two in 16..256."""
    if page < PAGE_MIN or page > PAGE_MAX or page & (page - 1):
        raise ValueError(f"{what} must be a power of two in {PAGE_MIN}..{PAGE_MAX}, got {page}")
