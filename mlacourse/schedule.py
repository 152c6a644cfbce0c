"""Work schedules for paged MLA decode, and a model of the HBM traffic they cause.

Plain numpy (it runs in the browser too). Two designs are modelled:

  splitkv_programs  version 3's split-KV grid (b, row_blocks, num_splits): one split
                   count for every sequence, from an upper bound on the longest one;
                   launched sequence fastest (the grid's x axis), the row blocks of one
                   sequence run b programs apart; row block fastest, they run together.
  plan_decode      a FlashMLA-style planner (like its get_mla_metadata): num_parts
                   persistent programs per row block, each given an equal share of
                   (sequence, KV-block) work that may span sequence boundaries, with a
                   fixed overhead per piece of a sequence; a sequence is split only where
                   a share boundary falls inside it, and only split sequences need the
                   combine step. The row blocks of one part are adjacent in launch order
                   (row block fastest), so they run at the same time on the same keys.

Work is counted in KV blocks of block_n tokens plus `overhead` blocks per piece (loading
q, writing the output row). `l2_traffic` replays the reads of a schedule through an LRU
model of the L2 cache to estimate how many bytes come from HBM per byte of the cache."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

L2_BYTES_HOPPER = 50 * 2**20  # H100/H200 SXM: 50 MB of L2 (NVIDIA Hopper architecture whitepaper)
FIXED_OVERHEAD_BLOCKS = 5  # a piece's fixed cost in KV blocks (FlashMLA's get_mla_metadata uses 5)


def cdiv(a, b):
    return -(-a // b)


def row_blocks(s_q: int, h_q: int, block_m: int = 64) -> int:
    """Programs needed to cover the s_q*h_q query rows of one sequence."""
    return cdiv(s_q * h_q, block_m)


@dataclass
class Plan:
    """A planned schedule. Segments are pieces of one sequence's key range:
    segments [n_seg, 4] int: (sequence, first KV block, end KV block, partial slot or -1);
    part_start [num_parts + 1]: part p runs segments part_start[p] .. part_start[p+1]-1;
    combine [n_split_seqs, 3]: (sequence, first slot, number of slots) for split sequences."""
    segments: np.ndarray
    part_start: np.ndarray
    combine: np.ndarray
    num_parts: int
    row_blocks: int
    block_m: int
    block_n: int
    overhead: int
    part_work: np.ndarray = field(repr=False)  # [num_parts] blocks + overhead per part
    batch_invariant: bool = False  # no sequence is cut: each one's result is the same in any batch

    @property
    def num_slots(self) -> int:
        return int(self.combine[:, 2].sum()) if len(self.combine) else 0

    @property
    def programs(self) -> int:
        return self.num_parts * self.row_blocks


def plan_decode(cache_seqlens, h_q: int, s_q: int, num_sms: int, block_n: int = 64, block_m: int = 64,
                overhead: int = FIXED_OVERHEAD_BLOCKS, batch_invariant: bool = False,
                programs_per_sm: int = 1) -> Plan:
    """Cut the batch's (sequence, KV block) work into equal shares, one per persistent part.

    A piece of a sequence costs `overhead` + its blocks. The greedy walk fills each part
    up to a budget, cutting a sequence where the budget runs out; the smallest budget
    that needs at most num_parts parts is found by bisection.

    batch_invariant=True never cuts a sequence (FlashMLA's trade, chapter 8): a sequence that
    does not fit in what is left of a part starts the next one. Where a sequence is cut, and
    so the order in which its partial results are summed, depends on the other sequences of
    the batch; uncut, a sequence's result depends on nothing but itself -- at the price of
    the balance: one long sequence is one part's work.
    programs_per_sm: persistent parts per SM (2 where two programs fit on an SM at once:
    resident_programs)."""
    lens = np.asarray(cache_seqlens, dtype=np.int64)
    if lens.ndim != 1 or (lens < 0).any():
        raise ValueError(f"cache_seqlens must be a 1-D array of lengths >= 0, got {lens!r}")
    if programs_per_sm < 1:
        raise ValueError(f"programs_per_sm must be >= 1, got {programs_per_sm}")
    rb = row_blocks(s_q, h_q, block_m)
    num_parts = max(1, num_sms * programs_per_sm // rb)
    blocks = cdiv(lens, block_n)  # [b]
    cut = not batch_invariant
    lo = overhead + max(1, cdiv(int(blocks.sum() + overhead * len(lens)), num_parts) - overhead)
    if not cut:  # a part must hold the longest sequence whole
        lo = max(lo, overhead + int(blocks.max(initial=0)))
    hi = lo
    while len(_greedy(blocks, hi, overhead, cut)) > num_parts:  # grow until feasible
        hi *= 2
    while lo < hi:  # smallest budget whose greedy walk fits in num_parts
        mid = (lo + hi) // 2
        if len(_greedy(blocks, mid, overhead, cut)) <= num_parts:
            hi = mid
        else:
            lo = mid + 1
    parts = _greedy(blocks, lo, overhead, cut)
    pieces = {}
    for p in parts:
        for seq, b0, b1 in p:
            pieces[seq] = pieces.get(seq, 0) + 1
    slot_base, next_slot, combine = {}, 0, []
    for seq in sorted(pieces):
        if pieces[seq] > 1:
            slot_base[seq] = next_slot
            combine.append((seq, next_slot, pieces[seq]))
            next_slot += pieces[seq]
    seen = {}
    segments, part_start, part_work = [], [0], []
    for p in parts:
        for seq, b0, b1 in p:
            k = seen.get(seq, 0)
            seen[seq] = k + 1
            segments.append((seq, b0, b1, slot_base[seq] + k if seq in slot_base else -1))
        part_start.append(len(segments))
        part_work.append(sum(b1 - b0 + overhead for _, b0, b1 in p))
    while len(part_start) < num_parts + 1:  # parts with nothing to do
        part_start.append(len(segments))
        part_work.append(0)
    return Plan(np.array(segments, dtype=np.int64).reshape(-1, 4), np.array(part_start, dtype=np.int64),
                np.array(combine, dtype=np.int64).reshape(-1, 3), num_parts, rb, block_m, block_n, overhead,
                np.array(part_work, dtype=np.int64), batch_invariant)


def _greedy(blocks, budget: int, overhead: int, cut: bool = True):
    """Parts as lists of (seq, first block, end block), each costing at most `budget`
    (> overhead): fill a part, cutting the current sequence where the budget runs out.
    cut=False: a sequence that does not fit in the part's room starts the next part."""
    parts, cur, room = [], [], budget
    for seq, n in enumerate(blocks.tolist()):
        if not cut:
            if cur and room < overhead + n:
                parts.append(cur)
                cur, room = [], budget
            cur.append((seq, 0, n))
            room -= overhead + n
            continue
        start = 0
        while True:
            if room - overhead <= 0:
                parts.append(cur)  # this part is full
                cur, room = [], budget
            take = min(n - start, room - overhead)
            cur.append((seq, start, start + take))
            room -= overhead + take
            start += take
            if start >= n:
                break
    if cur:
        parts.append(cur)
    return parts


def fixed_split_pieces(cache_seqlens, split_blocks: int, block_n: int = 64) -> list:
    """Pieces of a fixed size: every sequence cut at multiples of split_blocks KV blocks,
    whatever the batch (the remedy discussed in Dao-AILab/flash-attention#1897 and proposed for
    attention in Thinking Machines' "Defeating nondeterminism in LLM inference", 2025: the
    cut depends on the sequence alone, so with a fixed combine order a sequence's result is
    the same bits in any batch, and long sequences are still spread over many programs).
    Returns [(seq, first block, end block)], a sequence's pieces in order."""
    if int(split_blocks) != split_blocks or split_blocks < 1:
        raise ValueError(f"split_blocks must be a whole number >= 1, got {split_blocks!r}")
    lens = np.asarray(cache_seqlens, dtype=np.int64)
    if lens.ndim != 1 or (lens < 0).any():
        raise ValueError(f"cache_seqlens must be a 1-D array of lengths >= 0, got {lens!r}")
    pieces = []
    for seq, n in enumerate(cdiv(lens, block_n).tolist()):
        for b0 in range(0, max(n, 1), split_blocks):
            pieces.append((seq, b0, min(b0 + split_blocks, n)))
    return pieces


def plan_seq_of_slot(plan: Plan) -> np.ndarray:
    """For each partial slot, its sequence (a check that slots are contiguous per sequence)."""
    out = np.full(plan.num_slots, -1, dtype=np.int64)
    for seq, base, n in plan.combine.tolist():
        out[base:base + n] = seq
    return out


# ---------------------------------------------------------------------------------------
# Version 3's split-KV grid (kernels.mla_decode's "splitkv"), and the model's comparison of it with the plan
# ---------------------------------------------------------------------------------------

def splitkv_num_splits(b: int, s_q: int, h_q: int, max_seqlen_bound: int, num_sms: int, block_m: int = 64,
                       block_n: int = 64, min_tiles_per_split: int = 4) -> int:
    """The split-KV version's split count: about two programs per SM over the grid, at
    least min_tiles_per_split tiles per split, at most 64 (kernels.mla_decode)."""
    programs = b * row_blocks(s_q, h_q, block_m)
    want = cdiv(2 * num_sms, programs)
    most = max(1, cdiv(max_seqlen_bound, block_n * min_tiles_per_split))
    return int(max(1, min(want, most, 64)))


def splitkv_programs(cache_seqlens, h_q: int, s_q: int, num_splits: int, block_n: int = 64, block_m: int = 64,
                     seq_fastest: bool = True):
    """Programs of the grid (b, row_blocks, splits) in launch order: (seq, row block, first
    block, end block). CUDA launches blockIdx.x fastest; with the sequence on x
    (seq_fastest=True) the row blocks of one sequence are b programs apart, with the row
    block on x they are adjacent."""
    lens = np.asarray(cache_seqlens, dtype=np.int64)
    rb = row_blocks(s_q, h_q, block_m)
    progs = []
    order = [(i, m, s) for s in range(num_splits) for m in range(rb) for i in range(len(lens))] if seq_fastest \
        else [(i, m, s) for s in range(num_splits) for i in range(len(lens)) for m in range(rb)]
    for i, m, s in order:
        n_blocks = cdiv(int(lens[i]), block_n)
        per = cdiv(n_blocks, num_splits)
        b0, b1 = min(s * per, n_blocks), min((s + 1) * per, n_blocks)
        progs.append((i, m, b0, b1))
    return progs


def planned_programs(plan: Plan):
    """Programs of the planned grid (row_blocks, num_parts) in launch order (row block
    fastest): (part, row block, list of (seq, first block, end block))."""
    progs = []
    for p in range(plan.num_parts):
        segs = [tuple(int(x) for x in plan.segments[j, :3])
                for j in range(plan.part_start[p], plan.part_start[p + 1])]
        for m in range(plan.row_blocks):
            progs.append((p, m, segs))
    return progs


# ---------------------------------------------------------------------------------------
# Machine model: programs on SMs, reads through an LRU L2
# ---------------------------------------------------------------------------------------

SMEM_PER_SM_90 = 233_472  # bytes of shared memory per SM on H100/H200 (228 KB)
SMEM_RESERVED_PER_BLOCK = 1_024  # the driver's share of each resident block (sm_80 and later)
REGS_PER_SM_90 = 65_536
MAX_WARPS_PER_SM_90 = 64


def resident_programs(shared_bytes: int, regs_per_thread: int, num_warps: int) -> int:
    """How many programs of one kernel an sm_90 SM holds at once: the smallest of what shared
    memory (each block also takes 1 KB reserved), registers (allocated per warp in units of
    256: a thread's count rounded up to a multiple of 8) and warp slots allow. The compile
    report (kernels/compile_report.py) gives shared_bytes and regs_per_thread."""
    if shared_bytes < 0 or regs_per_thread < 1 or num_warps < 1:
        raise ValueError("need shared_bytes >= 0, regs_per_thread >= 1, num_warps >= 1")
    by_smem = SMEM_PER_SM_90 // (shared_bytes + SMEM_RESERVED_PER_BLOCK)
    regs_per_warp = -(-regs_per_thread // 8) * 8 * 32
    by_regs = REGS_PER_SM_90 // (regs_per_warp * num_warps)
    by_warps = MAX_WARPS_PER_SM_90 // num_warps
    return int(max(0, min(by_smem, by_regs, by_warps)))


def run_programs(programs_work, num_sms: int, programs_per_sm: int = 1):
    """Block scheduler model: programs (a list of work amounts, launch order) start on an SM
    with a free slot (the one running the fewest, then the lowest index), programs_per_sm
    slots per SM (1 for the 64-row kernels: >110 KB of shared memory each). Programs that
    share an SM share its throughput equally (an SM does one unit of work per unit of time
    however many programs it holds), so a second slot changes where work lands, not how
    fast an SM works. Returns start times [n] and per-SM busy time [num_sms]."""
    work = [float(w) for w in programs_work]
    starts = np.zeros(len(work))
    if programs_per_sm == 1:
        free = np.zeros(num_sms)
        for j, w in enumerate(work):
            sm = int(np.argmin(free))
            starts[j] = free[sm]
            free[sm] += w
        return starts, free
    running = [dict() for _ in range(num_sms)]  # sm -> {program: work left}
    busy = np.zeros(num_sms)
    now, nxt = 0.0, 0
    while True:
        while nxt < len(work):  # fill free slots in launch order
            sm = min(range(num_sms), key=lambda i: (len(running[i]), i))
            if len(running[sm]) >= programs_per_sm:
                break
            starts[nxt] = now
            running[sm][nxt] = work[nxt]
            nxt += 1
        active = [(left * len(r), sm, j) for sm, r in enumerate(running) for j, left in r.items()]
        if not active:
            break
        dt = min(a[0] for a in active)  # the next program to finish
        for sm, r in enumerate(running):
            n = len(r)
            for j in list(r):
                r[j] -= dt / n
                if r[j] <= 1e-9:
                    del r[j]
                    busy[sm] = now + dt
        now += dt
    return starts, busy


def l2_traffic(reads, l2_bytes: int, tile_bytes: int):
    """reads: (time, key) for every KV-tile read; returns bytes fetched from HBM under an
    LRU cache of l2_bytes (a read hits if its tile is still resident)."""
    cap = max(1, l2_bytes // tile_bytes)
    lru = OrderedDict()
    misses = 0
    for _, key in sorted(reads, key=lambda r: r[0]):
        if key in lru:
            lru.move_to_end(key)
        else:
            misses += 1
            lru[key] = None
            if len(lru) > cap:
                lru.popitem(last=False)
    return misses * tile_bytes


@dataclass
class ScheduleStats:
    design: str
    programs: int
    splits: int  # pieces beyond one per sequence (partial results the combine must merge)
    split_seqs: int  # sequences cut into more than one piece
    work_max: float  # busiest SM, in KV blocks (+ overhead)
    work_mean: float  # total work / num_sms
    hbm_per_kv: float  # modelled KV bytes from HBM / cache bytes
    partial_bytes: int  # o_part + lse_part written and read back by the combine

    @property
    def imbalance(self) -> float:
        return self.work_max / self.work_mean if self.work_mean else 1.0


def _reads_and_work(progs, overhead, kv_row_bytes, block_n):
    """progs: (key, list of (seq, b0, b1)); returns work per program and the (offset, key) reads."""
    work, reads = [], []
    for _, segs in progs:
        w = sum(b1 - b0 + overhead for _, b0, b1 in segs)
        work.append(w)
        t = 0.0
        off = []
        for seq, b0, b1 in segs:
            t += overhead
            for blk in range(b0, b1):
                off.append((t + 0.5, (seq, blk)))
                t += 1
        reads.append(off)
    return work, reads


def schedule_stats(design: str, cache_seqlens, h_q: int, s_q: int, num_sms: int = 132, block_n: int = 64,
                   block_m: int = 64, overhead: int = FIXED_OVERHEAD_BLOCKS, kv_row_bytes: int = 1152,
                   l2_bytes: int = L2_BYTES_HOPPER, max_seqlen_bound: int | None = None,
                   seq_fastest: bool = True, batch_invariant: bool = False,
                   programs_per_sm: int = 1, split_blocks: int | None = None) -> ScheduleStats:
    """Per-SM work, programs, splits and modelled HBM traffic of one design on one batch.
    design: "splitkv" (version 3's split-KV grid), "planned" (plan_decode, batch_invariant: no sequence
    cut) or "fixed" (fixed_split_pieces of split_blocks blocks, one program per piece and
    row block, launched in order). programs_per_sm: resident programs per SM (the plan then
    has that many parts per SM)."""
    lens = np.asarray(cache_seqlens, dtype=np.int64)
    n_rows = s_q * h_q
    if design == "splitkv":
        bound = int(max_seqlen_bound if max_seqlen_bound is not None else lens.max(initial=0))
        splits = splitkv_num_splits(len(lens), s_q, h_q, bound, num_sms, block_m, block_n)
        raw = splitkv_programs(lens, h_q, s_q, splits, block_n, block_m, seq_fastest)
        progs = [((i, m), [(i, b0, b1)]) for i, m, b0, b1 in raw]
        n_partials = len(lens) * splits if splits > 1 else 0
        split_seqs = len(lens) if splits > 1 else 0
    elif design == "planned":
        plan = plan_decode(lens, h_q, s_q, num_sms, block_n, block_m, overhead, batch_invariant, programs_per_sm)
        progs = [((p, m), segs) for p, m, segs in planned_programs(plan)]
        n_partials = plan.num_slots
        split_seqs = len(plan.combine)
    elif design == "fixed":
        if split_blocks is None:
            raise ValueError("design 'fixed' needs split_blocks (the piece size in KV blocks)")
        pieces = fixed_split_pieces(lens, split_blocks, block_n)
        rb = row_blocks(s_q, h_q, block_m)
        progs = [((j, m), [piece]) for j, piece in enumerate(pieces) for m in range(rb)]
        per_seq = np.bincount([seq for seq, _, _ in pieces], minlength=len(lens))
        n_partials = int(per_seq[per_seq > 1].sum())
        split_seqs = int((per_seq > 1).sum())
    else:
        raise ValueError(f"design must be 'splitkv', 'planned' or 'fixed', got {design!r}")
    work, reads = _reads_and_work(progs, overhead, kv_row_bytes, block_n)
    starts, busy = run_programs(work, num_sms, programs_per_sm)
    all_reads = [(starts[j] + t, key) for j, r in enumerate(reads) for t, key in r]
    tile_bytes = block_n * kv_row_bytes
    cache_bytes = int(cdiv(lens, block_n).sum()) * tile_bytes
    hbm = l2_traffic(all_reads, l2_bytes, tile_bytes)
    partial_bytes = 2 * n_partials * n_rows * (512 + 1) * 4  # fp32 o_part and lse_part, written then read
    return ScheduleStats(design, len(progs), n_partials, split_seqs, float(busy.max()),
                         float(sum(work)) / num_sms, hbm / cache_bytes if cache_bytes else 1.0, partial_bytes)


def work_per_sm(cache_seqlens, h_q: int, s_q: int = 1, num_sms: int = 132, block_n: int = 64,
                overhead: int = FIXED_OVERHEAD_BLOCKS):
    """Busy time per SM [num_sms] (KV blocks + overhead) of version 3's split-KV grid, launched
    sequence fastest, and of the plan: (grid, plan)."""
    lens = np.asarray(cache_seqlens, dtype=np.int64)
    splits = splitkv_num_splits(len(lens), s_q, h_q, int(lens.max(initial=0)), num_sms, block_n=block_n)
    grid = [b1 - b0 + overhead for _, _, b0, b1 in splitkv_programs(lens, h_q, s_q, splits, block_n)]
    _, on_grid = run_programs(grid, num_sms)
    plan = plan_decode(lens, h_q, s_q, num_sms, block_n=block_n, overhead=overhead)
    planned = np.repeat(plan.part_work, plan.row_blocks).astype(float)
    planned = np.concatenate([planned, np.zeros(num_sms - len(planned))])
    return on_grid, planned


# ---------------------------------------------------------------------------------------
# Length distributions
# ---------------------------------------------------------------------------------------

def lengths_bench(rng, b: int, mean_sk: int, s_q: int):
    """kernels/bench.py --lengths clipped: normal around mean_sk (sd mean_sk/2), clipped to [s_q, 2*mean_sk]."""
    lens = rng.normal(mean_sk, mean_sk / 2, size=b).round()
    return np.clip(lens, s_q, 2 * mean_sk).astype(np.int64)


def lengths_flashmla(rng, b: int, mean_sk: int, s_q: int):
    """FlashMLA's test/benchmark draw: max(normal(mean_sk, mean_sk/2), s_q), no upper clip."""
    lens = rng.normal(mean_sk, mean_sk / 2, size=b)
    return np.maximum(lens, s_q).astype(np.int64)
