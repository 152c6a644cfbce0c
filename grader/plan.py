"""How one attempt runs, decided once from the problem and its cases: which cases share a
process, what each process may hold, each case's deadline, and the whole attempt's time.

Every rule here is enforced from outside the process that runs graded code:

  memory   A case with a memory budget of its own (``Case.memory_mb``: problem 6's long
           prefix, problem 8's expansion trap) runs alone, in a process of its own. Where
           the attempt has a cgroup (the jail), the judge sets that process's memory limit
           itself once the interpreter and the libraries the file imports are loaded and
           before a line of the file runs: what they hold, plus the budget, plus
           ``IMPORT_SLACK_MB`` for the file's own module-level objects (no room for files:
           memory in a memfd or the sandbox's tmpfs is memory). Without a cgroup the
           child sets the same headroom as hard rlimits before the file runs (a process
           cannot raise its hard limits). The other cases share one process whose cap is
           the problem's ``memory_mb``.
  time     Each case has its deadline (``Case.timeout_s`` or the problem's). The attempt as
           a whole has ``total_s``: every process's start-up, the largest case limit once
           (any one case may use all of it), and a tenth of every case's limit -- so an
           attempt that sleeps just under each deadline is stopped with "used its whole time
           budget" instead of holding a grader for the sum of the limits. An honest attempt
           uses a small fraction of it (README: measured times).

  kernel   A problem whose answer must be a Triton kernel's (``Problem.kernel``: problem 12)
           has one more process: the judge launches the file's kernel itself on every case,
           with no other line of the file run there (grader/child/kernel.py).

Everything else about how an attempt runs is decided here too, once: the machine's facts
(``machine()``: is there a GPU), each process's memory in one meaning (``budget_mb``: what
the attempt may hold beyond the interpreter and the libraries it loads; ``cgroup_mb``,
``rlimits``: how that is enforced), its processes, its files, its environment.

The parent (grader/sandbox.py, grader/jail.py) carries the plan out; the child only reads
its job. Nothing the attempt sends can change the plan.
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

STARTUP_S = {"numpy": 20.0, "torch": 60.0}   # per process: interpreter, imports, the file itself
IMPORT_SLACK_MB = 4      # a budget-bearing case's process: the file's own module-level objects
SHARE_OF_EACH_LIMIT = 0.1   # total_s: a tenth of every case's limit, beyond the largest one
# a process's cap where a cgroup holds it, when it starts: the interpreter and its imports
# (a budget-bearing process may import torch before its own cap is set), then the budget
BASE_MEMORY_MB = {"numpy": 512, "torch": 2048}
NO_CAP_MEMORY_MB = 16384       # a GPU run (CUDA maps large host regions): a loose backstop
MAX_PIDS = {"numpy": 64, "torch": 128}    # processes and threads, in all
TMPFS_MB = {"numpy": 64, "torch": 256}    # what the attempt may write in the sandbox, in all
FILE_MB = 64                   # RLIMIT_FSIZE where no cgroup caps the files together


@dataclass(frozen=True)
class Machine:
    """What the plan needs to know about this machine, asked once per process."""
    gpu: bool             # an NVIDIA GPU (nvidia-smi lists one): torch problems run compiled


_MACHINE: list = []


def machine() -> Machine:
    if not _MACHINE:
        try:
            gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            gpu = False
        _MACHINE.append(Machine(gpu))
    return _MACHINE[0]


def stack(problem) -> str:
    """"torch" for a problem that needs torch and Triton (a slower start, more memory and
    threads), else "numpy"."""
    return "torch" if problem.needs_torch else "numpy"


@dataclass(frozen=True)
class Group:
    """Cases that run one after another in one process, under one memory budget."""
    cases: tuple          # indices into the attempt's case list, in order
    memory_mb: int        # what the attempt may hold in this process beyond the interpreter
    own_budget: bool      # a single case with a budget of its own (set after start-up)
    kernel: bool = False  # the judge launches the file's kernel (Problem.kernel) on these cases


@dataclass(frozen=True)
class Plan:
    groups: tuple         # Group, in the order they run (the shared process first)
    timeouts: dict        # case index -> seconds
    startup_s: float      # per process, before its first case
    total_s: float        # the attempt's whole budget, every process together
    stack: str = "numpy"  # "torch": the problem needs torch and Triton
    gpu: bool = False     # this machine has a CUDA GPU (machine())

    # ---- memory: one meaning, several ways to hold it
    @property
    def uncapped(self) -> bool:
        """CUDA's driver maps large private regions of host memory: no cap for GPU runs."""
        return self.stack == "torch" and self.gpu

    def budget_mb(self, group: Group) -> int | None:
        """What the attempt may hold in this group's process beyond the interpreter and the
        libraries it loads (None: uncapped). The child sets it as its hard RLIMIT_DATA
        headroom before the file runs; a budget-bearing group adds the file's own objects."""
        if self.uncapped:
            return None
        return group.memory_mb + (IMPORT_SLACK_MB if group.own_budget else 0)

    def cgroup_mb(self, group: Group) -> int:
        """The cgroup's cap on everything the process holds (its files and memfds included),
        when it starts. A budget-bearing process's cap is lowered at 'alive' to what it holds
        then plus its budget (``budget_after_start_mb``)."""
        if self.uncapped:
            return NO_CAP_MEMORY_MB
        base = BASE_MEMORY_MB["torch" if group.own_budget else self.stack]
        return base + group.memory_mb + IMPORT_SLACK_MB + TMPFS_MB[self.stack]

    def budget_after_start_mb(self, group: Group) -> int | None:
        """A budget-bearing process's cgroup cap above what it holds at 'alive' (no room for
        files: memory in a memfd or the tmpfs is memory); None for the others."""
        return self.budget_mb(group) if group.own_budget else None

    def rlimits(self, group: Group, tasks_now: int) -> dict:
        """Where no cgroup holds the attempt: the hard limits the child sets on itself before
        the file runs. ``tasks_now``: the processes and threads its user owns already."""
        out = {"fsize": FILE_MB << 20}
        if not self.uncapped:
            out["as_headroom_mb"] = (self.budget_mb(group) if group.own_budget else
                                     BASE_MEMORY_MB[self.stack] + group.memory_mb + TMPFS_MB[self.stack])
        if sys.platform.startswith("linux"):
            # RLIMIT_NPROC counts every process and thread of the user (or of the sandbox's
            # user namespace); as root it does not apply at all
            out["nproc"] = MAX_PIDS[self.stack] + tasks_now
        return out

    @property
    def max_pids(self) -> int:
        return MAX_PIDS[self.stack]

    @property
    def tmpfs_mb(self) -> int:
        return TMPFS_MB[self.stack]

    # ---- the environment
    @property
    def interpret_triton(self) -> bool:
        """Triton's CPU interpreter: a torch problem on a machine without a GPU."""
        return self.stack == "torch" and not self.gpu

    def environment(self, home: str, tmp: str, inherit: dict | None = None) -> dict:
        """The child's environment: ``inherit`` (the caller's, for the unsandboxed process;
        nothing in the sandbox or as another user) without PYTHON* variables, then a home,
        temp and cache folders inside the attempt's scratch, one BLAS thread (a fast start,
        and memory that does not depend on the core count), Triton's interpreter where
        there is no GPU."""
        env = {k: v for k, v in (inherit or {}).items() if not k.startswith("PYTHON")}
        env.setdefault("PATH", "/usr/bin:/bin")
        env.update({"HOME": home, "TMPDIR": tmp, "MPLCONFIGDIR": f"{tmp}/.matplotlib",
                    "XDG_CACHE_HOME": f"{tmp}/.cache", "TRITON_CACHE_DIR": f"{tmp}/.triton"})
        if inherit is None:
            env.update({"LANG": "C.UTF-8", "USER": "nobody", "LOGNAME": "nobody"})
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[k] = "1"
        if self.interpret_triton:
            env["TRITON_INTERPRET"] = "1"
        return env


def case_limit(problem, case) -> float:
    return float(case.timeout_s or problem.timeout_s)


def plan_for(problem, cases: list) -> Plan:
    """The plan for grading ``cases`` (in the order the judge runs them)."""
    shared = tuple(i for i, c in enumerate(cases) if not c.memory_mb)
    alone = [i for i, c in enumerate(cases) if c.memory_mb]
    groups = []
    if shared or not alone:
        groups.append(Group(shared, int(problem.memory_mb), False))
    groups += [Group((i,), int(cases[i].memory_mb), True) for i in alone]
    if problem.kernel is not None:
        groups.append(Group(tuple(range(len(cases))), int(problem.memory_mb), False, kernel=True))
    timeouts = {i: case_limit(problem, c) for i, c in enumerate(cases)}
    startup = STARTUP_S[stack(problem)] + problem.timeout_s
    runs = [timeouts[i] for g in groups for i in g.cases]   # every case once per process it runs in
    return Plan(tuple(groups), timeouts, startup, total_budget_s(startup, len(groups), runs),
                stack(problem), machine().gpu)


def total_budget_s(startup_s: float, processes: int, limits) -> float:
    """Start-up for every process, the largest case limit once, and a tenth of each limit."""
    limits = list(limits)
    return startup_s * processes + max(limits, default=0.0) + SHARE_OF_EACH_LIMIT * sum(limits)


def attempt_budget_s(problem, seeds=range(3)) -> float:
    """The whole-attempt budget of ``problem`` (the largest over a few seeds), for the
    classroom's worker backstop."""
    return max(plan_for(problem, problem.make_cases(s)).total_s for s in seeds)


__all__ = ["Group", "Plan", "Machine", "machine", "plan_for", "total_budget_s", "attempt_budget_s",
           "case_limit", "stack", "STARTUP_S", "IMPORT_SLACK_MB", "TMPFS_MB"]
