"""Limits on one attempt that a fork, a ``setsid`` or a ``memfd`` cannot escape.

A per-attempt cgroup holds every process the attempt starts (a process cannot leave its
cgroup: the sandbox has its own cgroup namespace and no cgroup file system). Memory
counts anonymous pages, memfd and tmpfs pages alike; the process count counts threads.
After the attempt every process still in the cgroup is killed and the cgroup removed.

    cgroup v2  where this process may create a child cgroup with the memory and pids
               controllers (a delegated subtree, a container's private hierarchy)
    cgroup v1  where the memory and pids hierarchies are writable (root on a v1 or
               hybrid machine, e.g. CI)
    neither    (a laptop: v2 under systemd, no root) ``Cgroup`` is None and the child
               sets rlimits on itself instead; ``WEAKER`` says what that loses.

Processes join the cgroup before anything of the attempt exists: the command is started
through ``/bin/sh -c 'echo $$ > cgroup.procs; exec ...'`` (``wrap``). A cgroup is named
``mla-judge-<pid of the process that made it>-<n>``: when that process is killed before it
could remove it (a worker the pool replaced), ``sweep`` removes it later.
"""
from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

WEAKER = ("no writable cgroup here: memory is capped per process (RLIMIT_AS), not for all of "
          "the attempt's processes together; processes by RLIMIT_NPROC; files by RLIMIT_FSIZE "
          "per file; CPU only by the deadlines")
CPU_CORES = 1.0   # an attempt gets at most one core: the others grade the rest of the class
_counter = itertools.count()


def _mounts() -> list[tuple[str, str, str, set]]:
    """(mount point, root inside the hierarchy, fs type, super options) of cgroup mounts."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        parts, rparts = left.split(), right.split()
        if len(parts) < 5 or len(rparts) < 3 or rparts[0] not in ("cgroup", "cgroup2"):
            continue
        out.append((parts[4], parts[3], rparts[0], set(rparts[2].split(","))))
    return out


def _own_paths() -> dict:
    """{controller or "" (v2): this process's cgroup path} from /proc/self/cgroup."""
    out = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            out[c] = path
    return out


def _join(mount: str, root: str, path: str) -> Path:
    rel = path[len(root):] if root != "/" and path.startswith(root) else path
    return Path(mount + "/" + rel.lstrip("/"))


@dataclass
class Cgroup:
    version: int
    dirs: dict                      # controller ("" for v2) -> the attempt's cgroup folder
    limits: dict = field(default_factory=dict)   # what was set, for the notes

    @property
    def procs_files(self) -> list[str]:
        return sorted({str(d / "cgroup.procs") for d in self.dirs.values()})

    def pids(self) -> set[int]:
        found = set()
        for f in self.procs_files:
            try:
                found |= {int(x) for x in Path(f).read_text().split()}
            except (OSError, ValueError):
                pass
        return found

    def oom_killed(self) -> bool:
        """Did the kernel kill a process of the attempt for going over the memory cap?"""
        d = self.dirs.get("" if self.version == 2 else "memory")
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (d / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError, TypeError):
            pass
        return False

    def _memory_file(self, v2: str, v1: str) -> Path:
        return self.dirs["" if self.version == 2 else "memory"] / (v2 if self.version == 2 else v1)

    def memory_now(self) -> int | None:
        """Bytes the attempt's processes hold right now (anonymous, tmpfs and page cache)."""
        try:
            return int(self._memory_file("memory.current", "memory.usage_in_bytes").read_text().split()[0])
        except (OSError, ValueError, IndexError, KeyError):
            return None

    def set_memory(self, limit_bytes: int) -> bool:
        """Lower (or raise) the memory cap while the attempt runs; True when it took."""
        limit_bytes = int(limit_bytes)
        if self.version == 2:
            ok = _write(self.dirs[""] / "memory.max", str(limit_bytes))
        else:
            mem = self.dirs["memory"]
            swap = mem / "memory.memsw.limit_in_bytes"
            # v1 keeps memsw >= limit: lower the limit first, raise memsw first
            lowering = limit_bytes <= self.limits.get("memory", limit_bytes)
            order = [mem / "memory.limit_in_bytes", swap] if lowering else [swap, mem / "memory.limit_in_bytes"]
            ok = all(_write(f, str(limit_bytes)) for f in order if f.exists())
        if ok:
            self.limits["memory"] = limit_bytes
        return ok

    def kill_all(self, wait_s: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until none is left. True when empty."""
        end = time.monotonic() + wait_s
        while True:
            left = self.pids()
            if not left:
                return True
            if self.version == 2 and (self.dirs[""] / "cgroup.kill").exists():
                try:
                    (self.dirs[""] / "cgroup.kill").write_text("1")
                except OSError:
                    pass
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if time.monotonic() > end:
                return False
            time.sleep(0.01)

    def remove(self, wait_s: float = 15.0) -> bool:
        """Kill what is left and remove the folders. True when they are gone.

        The kernel frees a cgroup a moment after its last process has exited: on a loaded
        machine, or after an attempt that held gigabytes, that moment was over a second (CI
        found cgroups left behind with a fixed 1 s of tries), so this keeps trying, killing
        again in between, until ``wait_s``."""
        end = time.monotonic() + wait_s
        left = dict(self.dirs)
        while left:
            self.kill_all(wait_s=0.5)
            for controller, d in list(left.items()):
                try:
                    d.rmdir()
                    del left[controller]
                except FileNotFoundError:
                    del left[controller]
                except OSError:
                    pass   # busy: a process is still exiting
            if left and time.monotonic() > end:
                return False
            time.sleep(0.02 if left else 0)
        return True


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def _v2_parent() -> Path | None:
    own = _own_paths().get("")
    for mount, root, kind, _ in _mounts():
        if kind == "cgroup2" and own is not None:
            d = _join(mount, root, own)
            ctl = d / "cgroup.subtree_control"
            if ctl.is_file() and os.access(d, os.W_OK):
                enabled = set(ctl.read_text().split())
                if {"memory", "pids"} <= enabled:
                    return d
    return None


def _v1_parents() -> dict | None:
    own = _own_paths()
    found = {}
    for mount, root, kind, opts in _mounts():
        if kind != "cgroup":
            continue
        for c in ("memory", "pids", "cpu"):
            if c in opts and c in own and c not in found:
                d = _join(mount, root, own[c])
                if d.is_dir() and os.access(d, os.W_OK):
                    found[c] = d
    return found if {"memory", "pids"} <= set(found) else None


def _existing() -> dict:
    """{owner pid: [Cgroup]} for every judge cgroup found in this machine's hierarchies."""
    found: dict = {}
    parents = [(2, "", d) for d in [_v2_parent()] if d] + [(1, c, d) for c, d in (_v1_parents() or {}).items()]
    for version, controller, parent in parents:
        for d in parent.glob("mla-judge-*"):
            try:
                owner = int(d.name.split("-")[2])
            except (IndexError, ValueError):
                continue
            found.setdefault(owner, []).append(Cgroup(version, {controller: d}))
    return found


def sweep(owner: int | None = None) -> int:
    """Remove the judge cgroups made by ``owner`` (a worker that was killed), or, by
    default, by any process that no longer exists. Returns how many were removed."""
    n = 0
    for pid, groups in _existing().items():
        if (owner is not None and pid != owner) or (owner is None and (pid == os.getpid() or _alive(pid))):
            continue
        for cg in groups:
            cg.remove()
            n += 1
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_swept = []


def create(memory_bytes: int, max_pids: int, cpus: float = CPU_CORES) -> Cgroup | None:
    """A fresh cgroup for one attempt with these caps, or None where the machine does not
    let this process make one (then the child's rlimits are all there is)."""
    if not _swept:   # once per process: what killed processes left behind
        _swept.append(sweep())
    name = f"mla-judge-{os.getpid()}-{next(_counter)}"
    parent = _v2_parent()
    if parent is not None:
        d = parent / name
        try:
            d.mkdir()
        except OSError:
            d = None
        if d is not None:
            cg = Cgroup(2, {"": d})
            ok = _write(d / "memory.max", str(memory_bytes)) and _write(d / "pids.max", str(max_pids))
            if ok:
                _write(d / "memory.swap.max", "0")
                if (d / "cpu.max").exists():
                    _write(d / "cpu.max", f"{int(cpus * 100000)} 100000")
                cg.limits = {"memory": memory_bytes, "pids": max_pids}
                return cg
            cg.remove()
    parents = _v1_parents()
    if parents is None:
        return None
    made = {}
    cg = Cgroup(1, made)
    try:
        for c, p in parents.items():
            (p / name).mkdir()
            made[c] = p / name
        mem = made["memory"]
        if not (_write(mem / "memory.limit_in_bytes", str(memory_bytes))
                and _write(made["pids"] / "pids.max", str(max_pids))):
            raise OSError("the limits could not be set")
        if (mem / "memory.memsw.limit_in_bytes").exists():   # no escape into swap
            _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
        if "cpu" in made:
            _write(made["cpu"] / "cpu.cfs_period_us", "100000")
            _write(made["cpu"] / "cpu.cfs_quota_us", str(int(cpus * 100000)))
    except OSError:
        cg.remove()
        return None
    cg.limits = {"memory": memory_bytes, "pids": max_pids}
    return cg


def wrap(argv: list, cg: Cgroup | None) -> list:
    """``argv`` started inside ``cg``: a shell moves itself there, then becomes argv."""
    if cg is None:
        return list(argv)
    files = cg.procs_files
    script = ('n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
              'n=$((n-1)); done; exec "$@"')
    return ["/bin/sh", "-c", script, "sh", str(len(files)), *files, *argv]


_SUPPORT = None


def describe() -> str:
    """One line: the kind of cgroup an attempt gets here, or what is weaker without one."""
    global _SUPPORT
    if _SUPPORT is None:
        cg = create(64 << 20, 16)
        if cg is None:
            _SUPPORT = WEAKER
        else:
            ctl = ", ".join(sorted(c for c in cg.dirs if c)) or "memory, pids, cpu"
            _SUPPORT = f"cgroup v{cg.version} per attempt ({ctl})"
            cg.remove()
    return _SUPPORT


__all__ = ["Cgroup", "create", "wrap", "describe", "sweep", "WEAKER"]
