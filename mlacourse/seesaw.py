"""FlashMLA's "seesaw" schedule, in numpy: the register wall that forces it, the exact
order of its twelve steps, and a small discrete-event model of two warpgroups on one SM.

Plain numpy (it runs in the browser too); the pictures import matplotlib on demand.

  register_budget / REGISTER_LAYOUTS   registers per thread and per SM of three ways to hold
                                       the [64, 512] fp32 output of one 64-row block
  register_split, seesaw_partitions    how a warp-specialized kernel splits the register file,
                                       and version 6's two warpgroups: floor vs what ptxas made
  SEESAW_STEPS                         the twelve steps: warpgroup, unit, what each waits on
  seesaw_attend / seesaw_decode        attention computed in exactly the seesaw's step order
                                       (O split into O_L | O_R, two KV blocks per step, one
                                       shared running max), over a tile stream / a paged cache
  SMCosts, program_*, simulate         the schedule model: serial, FA3-style ping-pong (if the
                                       registers allowed it) and the seesaw, replayed on a
                                       tensor-core unit and a CUDA-core unit
  draw_register_budget, draw_timeline  the chapter's pictures

The step order follows FlashMLA's deep-dive blog (docs/20250422-new-kernel-deep-dive.md).
One correction: the blog prints the rescale factor as exp(m_new - m); multiplying an
accumulator by that would grow it when the max grows. The factor that keeps the sum exact
is exp(m - m_new) <= 1, which is what seesaw_attend uses (the test suite checks that the
printed sign gives wrong results)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# ---------------------------------------------------------------------------------------
# One Hopper SM (sm_90), as the CUDA programming guide and the H100 datasheet give it
# ---------------------------------------------------------------------------------------
REGS_PER_SM = 65_536  # 32-bit registers in one SM's register file
MAX_REGS_PER_THREAD = 255  # the most registers one thread can address
THREADS_PER_WARPGROUP = 128  # 4 warps of 32; a wgmma is issued by one warpgroup
BLOCK_M = 64  # query rows per program: the M of one wgmma (m64nNk16)
BLOCK_N = 64  # keys per KV block (FlashMLA's page and tile)
D_K, D_V = 576, 512  # absorbed MLA: K row = 512 latent + 64 rope; V = the 512 latent


# ---------------------------------------------------------------------------------------
# The register wall
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RegisterBudget:
    """Registers of one way to hold a 64-row block's output in wgmma accumulators.
    Per thread of a warpgroup (128 threads); fp32 values take one register each, bf16 two
    per register."""
    name: str
    warpgroups: int  # warpgroups that each hold an accumulator
    o_cols: int  # output columns each warpgroup accumulates
    o: int  # the O accumulator: 64 * o_cols fp32 / 128 threads
    s: int  # the score tile S = Q K^T [64, 64] fp32, a wgmma accumulator too
    p: int  # P [64, 64] in bf16 as the A operand of P V, read from registers
    state: int  # running max, running sum, rescale factor for the 2 rows each thread owns

    @property
    def used(self) -> int:
        """Registers per thread that the matrices and the softmax state need."""
        return self.o + self.s + self.p + self.state

    @property
    def left(self) -> int:
        """What remains per thread under the 255-register cap for addresses, loop counters,
        barrier phases and temporaries (negative: does not fit at all)."""
        return MAX_REGS_PER_THREAD - self.used

    @property
    def per_sm(self) -> int:
        """Registers all warpgroups of the program need for the same items."""
        return self.warpgroups * THREADS_PER_WARPGROUP * self.used

    @property
    def o_per_sm(self) -> int:
        return self.warpgroups * THREADS_PER_WARPGROUP * self.o

    @property
    def fits(self) -> bool:
        return self.left > 0 and self.per_sm < REGS_PER_SM


def accumulator_registers(rows: int = BLOCK_M, cols: int = D_V) -> int:
    """32-bit registers of an fp32 [rows, cols] accumulator: one per value (64 x 512 = 32,768)."""
    return rows * cols


def register_budget(name: str, warpgroups: int, o_cols: int, block_m: int = BLOCK_M,
                    block_n: int = BLOCK_N) -> RegisterBudget:
    """The registers one thread needs when `warpgroups` warpgroups each accumulate an fp32
    [block_m, o_cols] slice of the output (wgmma keeps its accumulator in registers),
    plus a [block_m, block_n] score tile, its bf16 copy P, and the softmax state.

    A wgmma m64nNk16 spreads its [64, N] fp32 accumulator over the warpgroup's 128 threads
    (N / 2 registers each); its B operand always comes from shared memory, its A operand
    from shared memory (Q for Q K^T) or from registers (P for P V: 64 x 64 bf16 = 16 per
    thread). Each thread of an m64 accumulator holds values of 2 rows, so the softmax state
    (max, sum, scale) is 3 x 2 registers."""
    per_thread = lambda n_values, bytes_per=4: n_values * bytes_per // (4 * THREADS_PER_WARPGROUP)  # noqa: E731
    return RegisterBudget(name, warpgroups, o_cols, o=per_thread(block_m * o_cols), s=per_thread(block_m * block_n),
                          p=per_thread(block_m * block_n, 2), state=3 * 2)


REGISTER_LAYOUTS = (
    register_budget("one warpgroup holds all of O", 1, D_V),
    register_budget("FA3 ping-pong: each warpgroup its own O", 2, D_V),
    register_budget("seesaw: O split into O_L | O_R", 2, D_V // 2),
)


# ---------------------------------------------------------------------------------------
# What the compiler made of it: version 6's two partitions (kernels/seesaw_decode.py)
# ---------------------------------------------------------------------------------------
# The budget above counts the matrices and the softmax state: a floor. A compiled kernel also
# holds addresses, row indices and masks, loop counters and barrier phases, and values kept
# alive across an asynchronous wgmma -- ptxas decides how many. Two rules bound it:
#   * the register cap a kernel starts with (.maxnreg) may be at most MAX_REGS_PER_THREAD; a
#     warp-specialized kernel then moves registers between warpgroups with setmaxnreg, in
#     multiples of 8, within the pair's 2 x cap (triton: the default partition gets what the
#     workers leave). Triton's own cap for 8 warps is 65,536 / 256 = 256 -- one too many, so
#     ptxas drops it and every setmaxnreg with it ("Too many maxnreg"): nothing is moved.
#   * each warpgroup's code must fit its share, or ptxas spills to local memory.

SETMAXNREG_STEP = 8  # setmaxnreg counts are multiples of 8, from 24 to 256


def register_split(cap: int, worker: int) -> dict:
    """Registers per thread of the two warpgroups of a 2-warpgroup warp-specialized kernel that
    starts with `cap` registers per thread and asks `worker` for its worker warpgroup: the
    default warpgroup gets the rest of the pair's 2 x cap, rounded down to a multiple of 8
    (triton's rule). `honoured` is False when ptxas would drop the cap (cap > 255); `valid` also
    needs both shares within setmaxnreg's range, 24..256."""
    default = (2 * cap - worker) // SETMAXNREG_STEP * SETMAXNREG_STEP
    honoured = cap <= MAX_REGS_PER_THREAD
    return dict(cap=cap, default=default, worker=worker, honoured=honoured,
                valid=honoured and all(24 <= r <= 256 for r in (default, worker)),
                per_sm=THREADS_PER_WARPGROUP * (default + worker))


@dataclass(frozen=True)
class PartitionRegisters:
    """One warpgroup of version 6 at its busiest point, per thread: the floor the matrices and
    the softmax state need, and what the compiled kernel gives and uses (COMPILED_V6)."""
    name: str
    floor_items: tuple  # (what, registers) at the busiest point of its loop
    setmaxnreg: int  # its share, after the split
    registers_named: int  # 1 + the highest register its SASS names (kernels/compile_report.py)
    loop_local_ops: int  # spill loads and stores (LDL/STL) in its KV loop

    @property
    def floor(self) -> int:
        return sum(r for _, r in self.floor_items)

    @property
    def beyond_floor(self) -> int:
        """Registers the compiled code holds beyond the floor: addresses, counters, masks, temporaries."""
        return self.registers_named - self.floor


# Recorded from `python -m kernels.compile_report --only seesaw` (sm_90, no GPU): kernels/BENCHMARKS.md
# carries the same figures, and tests/test_kernel_compile.py compiles version 6 again under both tritons and
# fails when these stop being what the compiler does. Per partition: (warpgroup 0, warpgroup 1).
COMPILED_V6 = {
    "3.6.0": dict(maxnreg=255, setmaxnreg=(256, 248), registers_named=(252, 234), loop_local_ops=(0, 0),
                  loop_instructions=(1612, 1357), spill_bytes=0),
    "3.9.0": dict(maxnreg=255, setmaxnreg=(256, 248), registers_named=(244, 232), loop_local_ops=(0, 0),
                  loop_instructions=(1611, 1377), spill_bytes=0),
}
# The same kernel with equal shares (kernels/BENCHMARKS.md): triton's cap of 256, which ptxas drops, and
# both shares 256, so both warpgroups compile against 255 and warpgroup 0 spills its hoisted wgmma
# descriptors in its loop -- why version 6 splits the registers 256/248.
COMPILED_V6_EQUAL_SHARES = {"3.6.0": dict(maxnreg=256, setmaxnreg=(256, 256), registers_named=(253, 239),
                                          loop_local_ops=(36, 0), loop_instructions=(1756, 1281),
                                          spill_bytes=300)}


def seesaw_partitions(triton_version: str = "3.6.0", compiled=None) -> tuple:
    """(warpgroup 0, warpgroup 1) of version 6: the floor at each one's busiest point and what the
    compiler made (COMPILED_V6[triton_version], the GPU machine's triton by default).
    Warpgroup 0's busiest point is step 9: O_L is being accumulated by the asynchronous P0 V0L
    product, whose A operand (P0 in bf16) must stay untouched until it ends, while P0 in fp32 is
    kept to be scaled by a1 once warpgroup 1 sends it. Warpgroup 1's is step 2 (S1 = Q K1^T into
    the S tile, O_R live) -- its own P1 is stored before its product and not kept."""
    c = compiled or COMPILED_V6[triton_version]
    one = register_budget("seesaw", 2, D_V // 2)
    wg0 = (("O_L accumulator", one.o), ("P0 fp32, kept for a1", one.s), ("P0 bf16, the wgmma A operand", one.p),
           ("max, sum, factors", one.state))
    wg1 = (("O_R accumulator", one.o), ("S1 = Q K1^T", one.s), ("max, sum, factors", one.state))
    return tuple(PartitionRegisters(name, items, c["setmaxnreg"][i], c["registers_named"][i], c["loop_local_ops"][i])
                 for i, (name, items) in enumerate((("warpgroup 0 (O_L)", wg0), ("warpgroup 1 (O_R)", wg1))))


def draw_register_budget(layouts=REGISTER_LAYOUTS):
    """Two bar charts: registers per thread (stacked: O, S, P, state; the 255 cap) and per SM
    (the output accumulators of all warpgroups; the 65,536 register file). Returns the figure."""
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.6))
    x = np.arange(len(layouts))
    bottom = np.zeros(len(layouts))
    for part, color in (("o", "tab:blue"), ("s", "tab:orange"), ("p", "tab:green"), ("state", "tab:red")):
        vals = np.array([getattr(b, part) for b in layouts], dtype=float)
        a1.bar(x, vals, bottom=bottom, color=color, label={"o": "O accumulator", "s": "S = QK^T tile",
                                                          "p": "P (bf16, wgmma A operand)",
                                                          "state": "max, sum, scale"}[part])
        bottom += vals
    a1.axhline(MAX_REGS_PER_THREAD, color="k", ls="--", lw=1, label="255 per thread (hardware cap)")
    for i, b in enumerate(layouts):
        a1.text(i, b.used + 4, f"{b.used}" + ("" if b.left > 0 else " > 255"), ha="center", fontsize=8)
    a1.set_xticks(x, [b.name.replace(": ", ":\n") for b in layouts], fontsize=7)
    a1.set_ylabel("registers per thread")
    a1.set_title("per thread of a warpgroup", fontsize=9)
    a1.legend(fontsize=7, loc="upper right")
    o_sm = [b.o_per_sm for b in layouts]
    a2.bar(x, o_sm, color="tab:blue")
    a2.axhline(REGS_PER_SM, color="k", ls="--", lw=1, label="65,536 per SM (register file)")
    for i, v in enumerate(o_sm):
        a2.text(i, v + 800, f"{v:,}", ha="center", fontsize=8)
    a2.set_xticks(x, [b.name.replace(": ", ":\n") for b in layouts], fontsize=7)
    a2.set_ylabel("registers of output accumulators")
    a2.set_title("per SM: the output accumulators alone", fontsize=9)
    a2.set_ylim(0, REGS_PER_SM * 1.15)
    a2.legend(fontsize=7, loc="upper left")
    fig.suptitle("The register wall: a 64 x 512 fp32 output is 32,768 of an SM's 65,536 registers", fontsize=10)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------
# The twelve steps
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    number: int
    warpgroup: int  # 0 holds O_L (columns 0..255), 1 holds O_R (256..511); -1: both
    unit: str  # "tensor" (wgmma), "CUDA" (FP32/MUFU), or "CUDA + tensor" (rescale, then wgmma)
    does: str
    waits_on: str


SEESAW_STEPS = (
    Step(0, -1, "-", "m = -inf (shared by both warpgroups); O_L = O_R = 0; l = 0", "-"),
    Step(1, 0, "tensor", "S0 = q K0^T * scale", "K0 in shared memory (TMA)"),
    Step(2, 1, "tensor", "S1 = q K1^T * scale", "K1 in shared memory (TMA)"),
    Step(3, 0, "CUDA", "m0 = max(m, rowmax S0); a0 = exp(m - m0); m = m0", "S0 (step 1)"),
    Step(4, 0, "CUDA", "P0 = exp(S0 - m0)", "-"),
    Step(5, 0, "CUDA + tensor", "O_L = a0 O_L + P0 V0L", "P0 (step 4); V0 = K0's first 512 columns"),
    Step(6, 1, "CUDA", "m1 = max(m, rowmax S1); a1 = exp(m0 - m1); m = m1", "S1 (step 2); m0 from warpgroup 0 (step 3)"),
    Step(7, 1, "CUDA", "P1 = exp(S1 - m1), also to shared memory", "-"),
    Step(8, 1, "CUDA + tensor", "O_R = (a0 a1) O_R + P1 V1R", "a0 from warpgroup 0 (step 3)"),
    Step(9, 0, "CUDA", "P0 = a1 P0, to shared memory", "a1 from warpgroup 1 (step 6)"),
    Step(10, 1, "tensor", "O_R = O_R + P0 V0R", "P0 in shared memory (step 9)"),
    Step(11, 0, "CUDA + tensor", "O_L = a1 O_L + P1 V1L", "P1 in shared memory (step 7)"),
)
# The blog's steps leave out the running sum l; it follows the same factors:
# l = (a0 a1) l + rowsum(P0 after step 9) + rowsum(P1).


def _shift(m_old, m_new):
    """exp(m_old - m_new) with -inf - -inf read as 0 (nothing seen yet: the factor is moot, 1)."""
    with np.errstate(invalid="ignore"):
        d = m_old - m_new
    return np.where(np.isneginf(m_new), 1.0, np.exp(np.where(np.isnan(d), 0.0, d)))


def _probs(s, m):
    """exp(s - m) per row; rows whose max is still -inf give zeros."""
    safe = np.where(np.isneginf(m), 0.0, m)
    return np.exp(s - safe[:, None])


def seesaw_attend(q, tiles, softmax_scale: float, d_v: int = D_V, dtype=np.float64, printed_sign: bool = False,
                  trace: list | None = None):
    """Attention of the rows of q over a stream of KV tiles, in the seesaw's step order.

    q [M, d_k]; tiles: an iterable of (kv [n, d_k], visible [M, n] bool) -- kv rows are K,
    their first d_v columns V; a key that no row may see must have finite values or be
    zeroed by the caller (0 * NaN is NaN). Tiles are taken two at a time (K0, K1); an odd
    last tile is paired with an empty one. Returns out [M, d_v] and lse [M] (natural log;
    out 0 and lse -inf for a row that saw no key).

    printed_sign=True uses the blog's factor exp(m_new - m) (wrong; for the test).
    trace: if a list, one dict per pair with the running max and factors (for the chapter)."""
    q = np.asarray(q, dtype=dtype)
    M = q.shape[0]
    half = d_v // 2
    m = np.full(M, -np.inf, dtype=dtype)  # shared running max (base e)
    l = np.zeros(M, dtype=dtype)  # running sum of exp(score - m)
    o_left = np.zeros((M, half), dtype=dtype)  # warpgroup 0's registers
    o_right = np.zeros((M, d_v - half), dtype=dtype)  # warpgroup 1's registers
    shift = (lambda a, b: _shift(b, a)) if printed_sign else _shift
    empty = (np.zeros((0, q.shape[1]), dtype=dtype), np.zeros((M, 0), dtype=bool))
    it = iter(tiles)
    for first in it:
        second = next(it, empty)
        (k0, vis0), (k1, vis1) = [(np.asarray(k, dtype=dtype), np.asarray(v, dtype=bool)) for k, v in (first, second)]
        # [1] warpgroup 0, [2] warpgroup 1: the two score tiles, on the tensor cores
        s0 = np.where(vis0, (q @ k0.T) * softmax_scale, -np.inf)  # [M, n0]
        s1 = np.where(vis1, (q @ k1.T) * softmax_scale, -np.inf)  # [M, n1]
        # [3] warpgroup 0: the new max after K0, and the factor for what was summed before
        m0 = np.maximum(m, s0.max(axis=1, initial=-np.inf))
        a0 = shift(m, m0)
        # [4] P0 relative to m0
        p0 = _probs(s0, m0)
        # [5] O_L catches up with m0, then takes P0 V0's left half
        o_left = o_left * a0[:, None] + p0 @ k0[:, :half]
        # [6] warpgroup 1: the max after K1, and the factor from m0 to m1
        m1 = np.maximum(m0, s1.max(axis=1, initial=-np.inf))
        a1 = shift(m0, m1)
        # [7] P1 relative to m1
        p1 = _probs(s1, m1)
        # [8] O_R was relative to the old m: both factors at once, then P1 V1's right half
        o_right = o_right * (a0 * a1)[:, None] + p1 @ k1[:, half:d_v]
        # [9] P0 moves from m0 to m1
        p0 = p0 * a1[:, None]
        # [10] O_R takes P0 V0's right half (P0 through shared memory)
        o_right = o_right + p0 @ k0[:, half:d_v]
        # [11] O_L catches up from m0 to m1, then takes P1 V1's left half
        o_left = o_left * a1[:, None] + p1 @ k1[:, :half]
        # the running sum follows the same factors
        l = l * a0 * a1 + p0.sum(axis=1) + p1.sum(axis=1)
        m = m1
        if trace is not None:
            trace.append(dict(m0=m0.copy(), m1=m1.copy(), a0=a0.copy(), a1=a1.copy()))
    seen = l > 0
    out = np.where(seen[:, None], np.concatenate([o_left, o_right], axis=1) / np.where(seen, l, 1.0)[:, None], 0.0)
    with np.errstate(divide="ignore"):
        lse = np.where(seen, m + np.log(np.where(seen, l, 1.0)), -np.inf)
    return out, lse


def paged_tiles(q_rows_visible, kv_cache, block_table, seq: int, seqlen: int, block: int = BLOCK_N):
    """The KV tiles of one sequence read the way the kernel reads them: `block` tokens at a
    time through the block table, only the entries and slots below seqlen (rows past the end
    are zeros, never read: they may be poisoned). q_rows_visible [M] = keys each query row
    may see. Yields (kv [block or fewer, d], visible [M, n])."""
    page = kv_cache.shape[1]
    d = kv_cache.shape[-1]
    for lo in range(0, seqlen, block):
        tok = np.arange(lo, min(lo + block, seqlen), dtype=np.int64)
        rows = np.zeros((len(tok), d), dtype=np.float64)
        for j, t in enumerate(tok.tolist()):
            rows[j] = kv_cache[int(block_table[seq, t // page]), t % page, 0]
        yield rows, tok[None, :] < np.asarray(q_rows_visible)[:, None]


def seesaw_decode(q, kv_cache, block_table, cache_seqlens, softmax_scale: float | None = None, causal: bool = False,
                  block: int = BLOCK_N, dtype=np.float64):
    """Paged absorbed-MLA decode computed in the seesaw's order, in FlashMLA's convention.

    q [b, s_q, h_q, 576]; kv_cache [num_blocks, page_block_size, 1, 576]; block_table
    [b, max_blocks]; cache_seqlens [b]. Returns out [b, s_q, h_q, 512] and lse [b, h_q, s_q]
    (natural log, -inf where a row sees no key). Causal rows are bottom-right aligned."""
    q = np.asarray(q, dtype=dtype)
    b, s_q, h_q, d_k = q.shape
    scale = d_k ** -0.5 if softmax_scale is None else softmax_scale
    out = np.zeros((b, s_q, h_q, D_V), dtype=dtype)
    lse = np.full((b, h_q, s_q), -np.inf, dtype=dtype)
    for i in range(b):
        n = int(cache_seqlens[i])
        rows = q[i].reshape(s_q * h_q, d_k)  # row = i_s * h_q + i_h
        i_s = np.arange(s_q * h_q) // h_q
        visible = (n - s_q + 1 + i_s) if causal else np.full(s_q * h_q, n)
        o, l_ = seesaw_attend(rows, paged_tiles(visible, kv_cache, block_table, i, n, block), scale, dtype=dtype)
        out[i] = o.reshape(s_q, h_q, D_V)
        lse[i] = l_.reshape(s_q, h_q).T
    return out, lse


# ---------------------------------------------------------------------------------------
# The schedule model: two warpgroups, a tensor-core unit and a CUDA-core unit
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SMCosts:
    """Clock costs of one Hopper SM's units: each field is a stated assumption.

    tensor cores: 4 per SM, 512 dense bf16 multiply-adds per clock each = 4096 FLOP/clock;
      at 1.83 GHz on 132 SMs that is the datasheet's 989.4 TFLOPS (mlacourse.hardware).
    FP32 lanes: 4 sub-partitions x 32 = 128 per clock.
    MUFU (exp2): 16 per clock per SM (the CUDA guide's throughput table; FlashAttention-3's
      paper quotes 3.9 TFLOPS of special functions on an H100 SXM5 = 16/clock on 132 SMs).
    A softmax score costs fp32_ops_per_score FP32 operations (scale-and-subtract FFMA,
      max, add into the row sum, bf16 convert) plus one exp2; the two pipes are taken not to
      overlap inside one operation (pessimistic). A rescale is one multiply per value."""
    tensor_flop_per_clock: float = 4096.0
    fp32_per_clock: float = 128.0
    mufu_per_clock: float = 16.0
    fp32_ops_per_score: float = 4.0
    clock_hz: float = 1.83e9

    def mma(self, m: int, n: int, k: int) -> float:
        """Clocks of an [m, k] x [k, n] product on the tensor cores."""
        return 2 * m * n * k / self.tensor_flop_per_clock

    def rowmax(self, n_scores: int) -> float:
        return n_scores / self.fp32_per_clock

    def exp(self, n_scores: int) -> float:
        """exp2 and the FP32 work of n_scores softmax entries (the row max counted separately)."""
        return n_scores / self.mufu_per_clock + n_scores * (self.fp32_ops_per_score - 1) / self.fp32_per_clock

    def scale(self, n_values: int) -> float:
        return n_values / self.fp32_per_clock


@dataclass
class Op:
    """One operation of a warpgroup's program. A tensor op is issued (asynchronously, like a
    wgmma) and the warpgroup moves on; a CUDA op keeps the warpgroup busy until it ends."""
    name: str
    warpgroup: int
    unit: str  # "tensor" or "CUDA"
    clocks: float
    deps: tuple = ()  # names of ops whose results this one reads
    step: str = ""  # the label in the timeline
    start: float = field(default=0.0, init=False)
    end: float = field(default=0.0, init=False)


def _qk(c: SMCosts, keys: int):
    return c.mma(BLOCK_M, keys, D_K)


def program_serial(n_blocks: int, c: SMCosts = SMCosts()):
    """FlashMLA's first kernel (February 2025), per 64-key block: warpgroup 0 computes S and
    the softmax and writes P to shared memory; then each warpgroup rescales its half of O
    and multiplies P by its half of V. Every block ends at a barrier (__syncthreads).
    Version 5 of this course runs the same phases, with S split by keys."""
    ops = [[], []]
    for t in range(n_blocks):
        prev = (f"pvL{t - 1}", f"pvR{t - 1}") if t else ()
        ops[0] += [Op(f"qk{t}", 0, "tensor", _qk(c, BLOCK_N), prev, "QK"),
                   Op(f"sm{t}", 0, "CUDA", c.rowmax(BLOCK_M * BLOCK_N) + c.exp(BLOCK_M * BLOCK_N), (f"qk{t}",), "softmax"),
                   Op(f"rsL{t}", 0, "CUDA", c.scale(BLOCK_M * D_V // 2), (f"sm{t}",), "rescale"),
                   Op(f"pvL{t}", 0, "tensor", c.mma(BLOCK_M, D_V // 2, BLOCK_N), (f"rsL{t}",), "PV")]
        ops[1] += [Op(f"rsR{t}", 1, "CUDA", c.scale(BLOCK_M * D_V // 2), (f"sm{t}",) + prev[1:], "rescale"),
                   Op(f"pvR{t}", 1, "tensor", c.mma(BLOCK_M, D_V // 2, BLOCK_N), (f"rsR{t}",), "PV")]
    return ops


def program_pingpong(n_blocks: int, c: SMCosts = SMCosts()):
    """FlashAttention-3's ping-pong, as it would run if registers allowed two [64, 512]
    accumulators: warpgroup w takes blocks w, w+2, ... with its own O (merged at the end,
    not counted); while one does its softmax, the other's products run."""
    ops = [[], []]
    for t in range(n_blocks):
        w = t % 2
        prev = t - 2
        ops[w] += [Op(f"qk{t}", w, "tensor", _qk(c, BLOCK_N), (f"sm{prev}",) if prev >= 0 else (), "QK"),
                   Op(f"sm{t}", w, "CUDA", c.rowmax(BLOCK_M * BLOCK_N) + c.exp(BLOCK_M * BLOCK_N), (f"qk{t}",), "softmax"),
                   Op(f"rs{t}", w, "CUDA", c.scale(BLOCK_M * D_V), (f"pv{prev}",) if prev >= 0 else (), "rescale"),
                   Op(f"pv{t}", w, "tensor", c.mma(BLOCK_M, D_V, BLOCK_N), (f"sm{t}", f"rs{t}"), "PV")]
    return ops


def program_seesaw(n_blocks: int, c: SMCosts = SMCosts()):
    """The seesaw, pair by pair (blocks 2p, 2p+1), each warpgroup's ops in program order,
    with the data dependencies of SEESAW_STEPS plus the register and shared-memory reuse:
    a rescale of O waits for the previous wgmma into it, S0 is rewritten only after step 9
    has read it, and P0's shared-memory buffer only after step 10 has used it."""
    ops = [[], []]
    half_pv = c.mma(BLOCK_M, D_V // 2, BLOCK_N)
    n_sc = BLOCK_M * BLOCK_N
    for p in range((n_blocks + 1) // 2):
        q = p - 1
        before = lambda name: (f"{name}{q}",) if q >= 0 else ()  # noqa: E731 -- the previous pair's op
        ops[0] += [Op(f"qk0_{p}", 0, "tensor", _qk(c, BLOCK_N), (), "1 QK0"),
                   Op(f"mx0_{p}", 0, "CUDA", c.rowmax(n_sc), (f"qk0_{p}",), "3 max"),
                   Op(f"ex0_{p}", 0, "CUDA", c.exp(n_sc), (f"mx0_{p}",), "4 exp"),
                   Op(f"rsL0_{p}", 0, "CUDA", c.scale(BLOCK_M * D_V // 2), (f"mx0_{p}",) + before("pvL1_"), "5 rescale"),
                   Op(f"pvL0_{p}", 0, "tensor", half_pv, (f"ex0_{p}", f"rsL0_{p}"), "5 P0V0L"),
                   Op(f"sc0_{p}", 0, "CUDA", c.scale(n_sc), (f"mx1_{p}", f"ex0_{p}") + before("pvR0_"), "9 P0*a1"),
                   Op(f"rsL1_{p}", 0, "CUDA", c.scale(BLOCK_M * D_V // 2), (f"mx1_{p}", f"pvL0_{p}"), "11 rescale"),
                   Op(f"pvL1_{p}", 0, "tensor", half_pv, (f"ex1_{p}", f"rsL1_{p}"), "11 P1V1L")]
        ops[1] += [Op(f"qk1_{p}", 1, "tensor", _qk(c, BLOCK_N), (f"qk0_{p}",), "2 QK1"),
                   Op(f"mx1_{p}", 1, "CUDA", c.rowmax(n_sc), (f"qk1_{p}", f"mx0_{p}"), "6 max"),
                   Op(f"ex1_{p}", 1, "CUDA", c.exp(n_sc), (f"mx1_{p}",) + before("pvL1_"), "7 exp"),
                   Op(f"rsR_{p}", 1, "CUDA", c.scale(BLOCK_M * D_V // 2), (f"mx1_{p}",) + before("pvR0_"), "8 rescale"),
                   Op(f"pvR1_{p}", 1, "tensor", half_pv, (f"ex1_{p}", f"rsR_{p}"), "8 P1V1R"),
                   Op(f"pvR0_{p}", 1, "tensor", half_pv, (f"sc0_{p}",), "10 P0V0R")]
    return ops


PROGRAMS = {"serial": program_serial, "ping-pong (if registers allowed)": program_pingpong,
            "seesaw": program_seesaw}


@dataclass
class Timeline:
    schedule: str
    ops: list  # every Op with start and end (clocks)
    makespan: float
    tensor_busy: float
    useful_flop: float  # QK^T + PV FLOP of the blocks

    @property
    def tensor_utilization(self) -> float:
        return self.tensor_busy / self.makespan if self.makespan else 0.0


def simulate(programs, name: str = "", c: SMCosts = SMCosts()) -> Timeline:
    """Replay two warpgroups' programs on one tensor-core unit and one CUDA-core unit.

    Rules: a warpgroup takes its ops in program order. An op may begin when every op it
    depends on has ended and its unit is free; a tensor op is issued when its inputs are
    ready and then waits for the unit (in issue order) while its warpgroup moves on; a CUDA
    op holds its warpgroup until it ends. Among the ops that could go next, the one that can
    start earliest is placed first (ties: earlier issue, then warpgroup 0). Memory is taken
    to be always ready (a compute-bound kernel whose copies are in flight in time)."""
    queues = [list(p) for p in programs]
    pos = [0] * len(queues)
    wg_free = [0.0] * len(queues)
    unit_free = {"tensor": 0.0, "CUDA": 0.0}
    done = {}
    placed = []
    total = sum(len(qu) for qu in queues)
    while len(placed) < total:
        best = None
        for w, qu in enumerate(queues):
            if pos[w] == len(qu):
                continue
            op = qu[pos[w]]
            if any(d not in done for d in op.deps):
                continue  # its inputs come from an op not yet placed (the other warpgroup)
            ready = max([wg_free[w]] + [done[d] for d in op.deps])
            start = max(ready, unit_free[op.unit])
            key = (start, ready, w)
            if best is None or key < best[0]:
                best = (key, w, op, ready, start)
        if best is None:
            raise ValueError(f"{name}: the programs deadlock (an op waits on one that never comes)")
        _, w, op, ready, start = best
        op.start, op.end = start, start + op.clocks
        unit_free[op.unit] = op.end
        wg_free[w] = ready if op.unit == "tensor" else op.end
        done[op.name] = op.end
        pos[w] += 1
        placed.append(op)
    makespan = max(o.end for o in placed)
    busy = sum(o.clocks for o in placed if o.unit == "tensor")
    return Timeline(name, placed, makespan, busy, 0.0)


def run_schedules(n_blocks: int = 16, c: SMCosts = SMCosts()) -> dict:
    """Every schedule of PROGRAMS on n_blocks 64-key blocks of one 64-row program."""
    useful = n_blocks * 2 * BLOCK_M * BLOCK_N * (D_K + D_V)
    out = {}
    for name, build in PROGRAMS.items():
        tl = simulate(build(n_blocks, c), name, c)
        tl.useful_flop = useful
        out[name] = tl
    return out


def draw_timeline(timelines, until: float | None = None):
    """Gantt charts, one panel per schedule: for each warpgroup a tensor-core lane and a
    CUDA-core lane, ops labelled by their step. Returns the figure."""
    import matplotlib.pyplot as plt

    timelines = list(timelines.values()) if isinstance(timelines, dict) else list(timelines)
    fig, axes = plt.subplots(len(timelines), 1, figsize=(12, 1.7 * len(timelines) + 0.6), sharex=True)
    axes = np.atleast_1d(axes)
    colors = {("tensor", 0): "tab:blue", ("tensor", 1): "tab:cyan", ("CUDA", 0): "tab:orange",
              ("CUDA", 1): "tab:red"}
    lanes = [(0, "tensor"), (0, "CUDA"), (1, "tensor"), (1, "CUDA")]
    end = until or max(t.makespan for t in timelines)
    for ax, tl in zip(axes, timelines):
        for o in tl.ops:
            if o.start >= end:
                continue
            y = lanes.index((o.warpgroup, o.unit))
            ax.broken_barh([(o.start, min(o.end, end) - o.start)], (y - 0.4, 0.8),
                           facecolors=colors[(o.unit, o.warpgroup)], edgecolor="k", lw=0.3)
            if o.clocks > 0.035 * end and o.end <= end:
                ax.text(o.start + o.clocks / 2, y, o.step, ha="center", va="center", fontsize=6)
        ax.set_yticks(range(4), [f"WG{w} {u}" for w, u in lanes], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"{tl.schedule}: tensor cores busy {tl.tensor_utilization:.0%} of "
                     f"{tl.makespan:,.0f} clocks", fontsize=9)
    axes[-1].set_xlim(0, end)
    axes[-1].set_xlabel("clocks of one SM (a model: costs from SMCosts, memory always ready)")
    fig.tight_layout()
    return fig
