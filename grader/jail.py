"""The operating-system boundary around one attempt: a bubblewrap sandbox (Linux).

``command`` builds the ``bwrap`` command line for one attempt. Inside, the attempt sees:

  /usr, /lib*, /bin (read-only)      the system's programs and libraries
  the interpreter's prefix (ro)      Python itself, at the path it was installed at
  the site-packages folders (ro)     numpy, torch, triton -- with any course package or
                                     editable-install hook found there hidden
  /judge/child/, /judge/job.pkl      the child's package alone (grader/child/) and the job
                                     (inputs, limits, the result pipe's token: no expected
                                     value, no seed)
  the attempt's file (ro)            at its own path, alone in its folder
  /tmp (a size-capped tmpfs)         the only writable place: cwd, HOME and TMPDIR
  /proc                              a fresh one showing only the sandbox's processes

and nothing else: not the course (mlacourse, solutions, the rest of grader, the
repository), not the teacher's files (seed, submissions, grades, cache, HOME), not the
network. New user, PID, network, IPC, UTS and cgroup namespaces; uid 65534 inside with no
capabilities and no further user namespaces; a cleared environment; a new session (no
terminal to inject keystrokes into); ``--die-with-parent``. The PID namespace ends with
its first process, so killing ``bwrap`` ends everything the attempt started, ``setsid``
daemons and double forks included. Limits on memory, processes and CPU come from
grader/limits.py.

``available()`` says whether bwrap works on this machine (a container's seccomp profile,
or a distribution that forbids unprivileged user namespaces, can refuse it).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import lru_cache

from . import child as _child

INSIDE_UID = 65534                  # "nobody"
JUDGE_DIR = "/judge"                # the child runner and the job, read-only
TMP = "/tmp"                        # the private tmpfs
WORK = "/tmp/work"                  # the attempt's working directory
HOME = "/tmp/home"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
# the CPU layout (OpenBLAS and torch read it to size their thread pools): not secret
SYSTEM_RO_TRY = ("/sys/devices/system/cpu",)
COURSE_NAMES = _child.COURSE_PACKAGES   # installed copies of these are hidden
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; "
                "Fedora: `sudo dnf install bubblewrap`); on macOS or Windows grade in a Linux VM, "
                "a container that allows user namespaces, or on Gradescope")


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@lru_cache(maxsize=1)
def _help() -> str:
    try:
        done = subprocess.run([bwrap_path() or "bwrap", "--help"], capture_output=True, text=True, timeout=30)
        return done.stdout + done.stderr
    except (OSError, subprocess.SubprocessError):
        return ""


def supports(option: str) -> bool:
    """Does this bwrap know ``option``? (Ubuntu 22.04 ships 0.6, without --disable-userns
    and --size; without them the attempt may nest user namespaces inside its sandbox, and
    its tmpfs is capped only by the cgroup's memory limit.)"""
    return option in _help()


def interpreter() -> tuple[str, str]:
    """(the real interpreter binary, its installation prefix). A venv's python is a
    link to the base interpreter: the sandbox runs the base one and gets the venv's
    packages through sys.path (``site_dirs``)."""
    exe = os.path.realpath(sys.executable)
    return exe, os.path.realpath(sys.base_prefix)


def site_dirs() -> list[str]:
    """The package folders the child needs (numpy, torch, ...): this interpreter's
    site-packages / dist-packages, never a folder added by hand (PYTHONPATH = the course)."""
    out = []
    for p in sys.path:
        if p and os.path.basename(p.rstrip("/")) in ("site-packages", "dist-packages") and os.path.isdir(p):
            r = os.path.realpath(p)
            if r not in out:
                out.append(r)
    return out


def _course_entries(site: str) -> list[str]:
    """Entries of a site-packages folder that are the course or point at it: an installed
    (non-editable) copy of its packages, an editable install's hook, any .pth file."""
    hidden = []
    try:
        names = sorted(os.listdir(site))
    except OSError:
        return hidden
    for name in names:
        stem = name.split(".")[0].split("-")[0].lower()
        if (stem in COURSE_NAMES or name.startswith("__editable__") or name.endswith(".pth")
                or stem.startswith("mla_inference_course")):
            hidden.append(os.path.join(site, name))
    return hidden


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _hide(path: str) -> list[str]:
    if os.path.isdir(path) and not os.path.islink(path):
        return ["--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", "/dev/null", path]


def base_args(tmp_bytes: int | None = None) -> list[str]:
    """Namespaces, identity, environment, the scratch /tmp and the read-only system view.

    The scratch tmpfs comes before the binds: bwrap mounts in order, and a venv or an
    interpreter that lives under /tmp (a pytest tmp_path, a teacher's throwaway venv) would
    otherwise vanish under it (numpy then 'not installed' inside the sandbox)."""
    exe, prefix = interpreter()
    args = ["--unshare-all", "--unshare-user", "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID),
            "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--hostname", "judge",
            "--proc", "/proc", "--dev", "/dev"]
    if tmp_bytes is not None and supports("--size"):
        args += ["--size", str(tmp_bytes)]
    args += ["--tmpfs", TMP, "--dir", WORK, "--dir", HOME]
    # (bwrap itself is started with an empty environment: --clearenv only where it exists)
    args += [opt for opt in ("--disable-userns", "--clearenv") if supports(opt)]
    bound = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
            bound.append(d)
    for f in SYSTEM_FILES + SYSTEM_RO_TRY:
        if os.path.exists(f):
            args += ["--ro-bind", f, f]
    for d in [prefix, *site_dirs()]:
        if not any(_under(d, b) for b in bound):
            args += ["--ro-bind", d, d]
            bound.append(d)
    for site in site_dirs():
        for entry in _course_entries(site):
            args += _hide(entry)
    return args


def command(child: str, job_file: str, attempt: str | None, fd: int, plan, hide=()) -> list[str]:
    """The full command line: bwrap, its options, then the child's interpreter, as ``plan``
    (grader/plan.py) says: its tmpfs, its environment, the GPU's devices where it runs on
    one. ``child``: the child's package folder (grader/child/), mounted alone at /judge/child."""
    exe, _ = interpreter()
    args = [bwrap_path() or "bwrap", *base_args(plan.tmpfs_mb << 20)]
    if plan.uncapped:   # a torch problem on a GPU: CUDA needs its device files and reads /sys
        for dev in sorted(os.listdir("/dev")):
            if dev.startswith("nvidia"):
                args += ["--dev-bind", f"/dev/{dev}", f"/dev/{dev}"]
        args += ["--ro-bind", "/sys", "/sys"]
    # the teacher's folders, where one lies inside something bound above (a course
    # installed under /usr, a venv inside the repository): hidden
    for h in hide:
        if os.path.exists(h) and any(_under(os.path.realpath(h), b) for b in _bound(args)):
            args += _hide(os.path.realpath(h))
    args += ["--ro-bind", child, f"{JUDGE_DIR}/child", "--ro-bind", job_file, f"{JUDGE_DIR}/job.pkl"]
    if attempt is not None:
        real = os.path.realpath(attempt)
        args += ["--ro-bind", real, real]
    for k, v in sorted(plan.environment(HOME, TMP).items()):
        args += ["--setenv", k, v]
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORK, "--",
             exe, "-I", "-S", "-u", f"{JUDGE_DIR}/child/__main__.py", "--fd", str(fd),
             "--job", f"{JUDGE_DIR}/job.pkl", "--sys-path", os.pathsep.join(site_dirs())]
    return args


def _bound(args: list) -> list[str]:
    return [args[i + 2] for i, a in enumerate(args[:-2]) if a == "--ro-bind"]


@lru_cache(maxsize=1)
def probe() -> str | None:
    """None when a sandbox starts here and runs Python; else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return f"no bubblewrap on {sys.platform}"
    if bwrap_path() is None:
        return "bubblewrap (bwrap) is not installed"
    exe, _ = interpreter()
    # the uid, and that the site-packages are visible inside (a bind hidden by a later mount
    # would leave numpy "not installed" in every attempt)
    check = f"import os; print(os.getuid() if all(map(os.path.isdir, {site_dirs()!r})) else 'no site-packages')"
    argv = [bwrap_path(), *base_args(1 << 20), "--remount-ro", "/", "--", exe, "-I", "-S", "-c", check]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                              env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError) as e:
        return f"bwrap could not be run ({e})"
    if done.stdout.strip() == "no site-packages":
        return "bwrap starts, but the sandbox does not show this Python's site-packages (grader/jail.py)"
    if done.returncode != 0 or done.stdout.strip() != str(INSIDE_UID):
        why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return f"bwrap is installed but cannot make a sandbox here ({why[:200]})"
    return None


def available() -> bool:
    return probe() is None


__all__ = ["available", "probe", "command", "environment", "site_dirs", "interpreter",
           "INSTALL_HINT", "WORK", "TMP", "HOME"]
