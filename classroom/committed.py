"""The course's files as of the last commit, for the teacher's tools.

``grade`` compares each attempt with the released stub, and ``gradescope`` packs the
judge and the stubs into the autograder. Both take those files from the last commit
(like ``release``), never from the working tree: a teacher who solved a practice file
in her checkout, or has a half-finished edit of a spec, grades and ships exactly what
she committed. Uncommitted changes are reported as warnings. Outside a git checkout the
folder is used as it is, and the warning says so.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

SKIP_PARTS = ("__pycache__", ".ipynb_checkpoints")


def _git(root: Path, *args: str, data: bytes | None = None) -> bytes | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], input=data, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def files(root: Path, paths: list[str]) -> tuple[dict, str, list[str]]:
    """({relative posix path: bytes} under ``paths`` (folders or files) at HEAD, where they
    came from ("git <commit>" or "working tree"), warnings)."""
    root = Path(root)
    top = _git(root, "rev-parse", "--show-toplevel")
    # only a checkout of this very folder counts (an autograder unpacked inside some other
    # repository, e.g. dist/ of the course, is read as the folder it is)
    is_checkout = top is not None and Path(top.decode().strip()).resolve() == root.resolve()
    head = _git(root, "rev-parse", "--verify", "HEAD") if is_checkout else None
    if head is None:
        out = {}
        for top in paths:
            start = root / top
            for f in sorted([start] if start.is_file() else start.rglob("*")):
                rel = f.relative_to(root).as_posix()
                if f.is_file() and not f.is_symlink() and not any(p in SKIP_PARTS for p in rel.split("/")):
                    out[rel] = f.read_bytes()
        return out, "working tree", [f"{root} is not a git checkout with a commit: the files were "
                                     "taken from the folder as it is"]
    commit = head.decode().strip()
    listing = _git(root, "ls-tree", "-r", "-z", "HEAD", "--", *paths) or b""
    entries = []   # (blob id, path)
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, _, name = item.partition(b"\t")
        mode, kind, blob = meta.split()
        if kind == b"blob" and mode != b"120000":   # no symbolic links
            entries.append((blob.decode(), name.decode()))
    out = {}
    if entries:
        raw = _git(root, "cat-file", "--batch", data=b"".join(b.encode() + b"\n" for b, _ in entries)) or b""
        pos = 0
        for blob, name in entries:
            header_end = raw.index(b"\n", pos)
            size = int(raw[pos:header_end].split()[2])
            out[name] = raw[header_end + 1: header_end + 1 + size]
            pos = header_end + 1 + size + 1
    warnings = []
    dirty = _git(root, "status", "--porcelain", "-z", "--untracked-files=no", "--", *paths) or b""
    changed = [e[3:].decode("utf-8", "replace") for e in dirty.split(b"\0") if len(e) > 3]
    if changed:
        warnings.append(f"the committed version (commit {commit[:12]}) is used; these uncommitted "
                        f"changes are not: {', '.join(changed[:8])}" + (" ..." if len(changed) > 8 else ""))
    return out, f"git {commit}", warnings


__all__ = ["files"]
