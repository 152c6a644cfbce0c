"""The README's two editions from one file: the repository's README.md, and the student
bundle's README (``python -m classroom release``).

README.md carries the differences as HTML comments, invisible on GitHub:

    <!-- repo-only -->            the lines up to <!-- /repo-only --> are left out of the
    ...                           student edition (the test suite, the model answers, the
    <!-- /repo-only -->           teachers' tools, the site's build)
    <!-- student-only             the lines up to /student-only --> are shown only in the
    ...                           student edition (hidden in the repository's README)
    /student-only -->

Other HTML comments are dropped from the student edition, and so is every line of a
command block that names a file, folder, module or option the bundle does not ship
(``references`` / ``missing``: the same check tests/test_classroom_docs.py runs on the
whole student edition, and on README.md against the repository).
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

REPO_ONLY = ("<!-- repo-only -->", "<!-- /repo-only -->")
# files the release writes into a bundle (not in the repository): a README may name them
JUDGE_LANG_FILE = "practice/.judge_lang"     # `release --lang zh`: the judge's default language
WRITTEN_BY_RELEASE = (JUDGE_LANG_FILE,)
STUDENT_ONLY = ("<!-- student-only", "/student-only -->")
PATH_SUFFIX = re.compile(r"\.(md|py|sh|txt|yml|yaml|toml|ipynb|json|ini|cfg)$")


class ReadmeError(ValueError):
    """The markers of README.md do not pair up."""


@dataclass(frozen=True)
class Ref:
    kind: str      # "link", "path", "module" or "flag"
    value: str
    line: int      # 1-based line of the text it was found on


# --------------------------------------------------------------------------- the student edition

def student_edition(text: str, files: dict, repo_files) -> str:
    """README.md as the bundle's README, for a bundle holding ``files`` ({posix path:
    bytes}) cut from a repository holding ``repo_files`` (posix paths)."""
    out, mode = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped == REPO_ONLY[0] or stripped == STUDENT_ONLY[0]:
            if mode is not None:
                raise ReadmeError(f"README.md line {number}: {stripped} inside an open {mode} block")
            mode = "repo-only" if stripped == REPO_ONLY[0] else "student-only"
            continue
        if stripped in (REPO_ONLY[1], STUDENT_ONLY[1]):
            want = "repo-only" if stripped == REPO_ONLY[1] else "student-only"
            if mode != want:
                raise ReadmeError(f"README.md line {number}: {stripped} closes no {want} block")
            mode = None
            continue
        if mode != "repo-only":
            out.append(line)
    if mode is not None:
        raise ReadmeError(f"README.md: a {mode} block is never closed")
    text = re.sub(r"(?ms)^<!--.*?-->[ \t]*\n", "", "\n".join(out) + "\n")   # the editors' notes
    text = _drop_unshipped_commands(text, files, set(repo_files))
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def _drop_unshipped_commands(text: str, files: dict, repo_files: set) -> str:
    """Lines of fenced blocks that name what the bundle lacks go; an emptied block goes too."""
    lines, out, block, fence = text.split("\n"), [], None, None
    for line in lines:
        if fence is None and line.lstrip().startswith("```"):
            fence, block = line, []
            continue
        if fence is not None:
            if line.lstrip().startswith("```"):
                if any(b.strip() for b in block):
                    out += [fence, *block, line]
                fence = block = None
            elif not [r for r in references(line, in_code=True) if missing(r, files, repo_files)]:
                block.append(line)
            continue
        out.append(line)
    if fence is not None:
        out += [fence, *block]
    return "\n".join(out)


# --------------------------------------------------------------------------- what a text names

def references(text: str, in_code: bool = False) -> list[Ref]:
    """Links, paths, ``python -m`` modules and ``--options`` the text names: link targets
    anywhere, the rest inside `code spans` and fenced blocks (``in_code``: all of it)."""
    refs, fenced = [], in_code
    for number, line in enumerate(text.split("\n"), start=1):
        if not in_code and line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if not re.match(r"^(https?:|mailto:|#)", target):
                refs.append(Ref("link", target.split("#", 1)[0], number))
        code = [line] if fenced else re.findall(r"`([^`]+)`", line)
        for span in code:
            span = span.split(" #", 1)[0]   # a shell comment says what it does, it runs nothing
            for m in re.finditer(r"(?:^|\s)-m\s+([\w.]+)", span):
                refs.append(Ref("module", m.group(1), number))
            for token in span.split():
                token = token.strip("\"'(),;:")
                if re.match(r"^--[a-z][\w-]*$", token):
                    refs.append(Ref("flag", token.split("=", 1)[0], number))
                elif ("/" in token or PATH_SUFFIX.search(token)) and not re.match(r"^(https?:|/|~|\$|-)", token):
                    refs.append(Ref("path", token.split("#", 1)[0].lstrip("./") if token.startswith("./")
                                    else token.split("#", 1)[0], number))
    return refs


def _exists(path: str, files) -> bool:
    path = path.rstrip("/")
    if not path:
        return True
    if any(ch in path for ch in "*?[") or "NN" in path:
        pattern = path.replace("NN", "[0-9][0-9]")
        return any(fnmatch.fnmatch(f, pattern) or fnmatch.fnmatch(f, pattern + "/*") for f in files)
    return path in files or any(f.startswith(path + "/") for f in files)


def _made_at_run_time(path: str) -> bool:
    """A file the course writes while it runs (the judge's hint counter, results.json):
    listed in the repository's .gitignore, so never shipped and never committed."""
    ignore = Path(__file__).resolve().parents[1] / ".gitignore"
    if not ignore.is_file():
        return False
    patterns = [ln.strip() for ln in ignore.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return any(fnmatch.fnmatch(path, pat) for pat in patterns if "/" in pat.rstrip("/"))


def _top_level(paths) -> set:
    return {f.split("/", 1)[0] for f in paths}


def missing(ref: Ref, files: dict, repo_files) -> str:
    """Why ``ref`` is not available among ``files`` ({posix path: bytes}; "" when it is).
    Paths are checked when their first part is a top-level entry of the repository
    (``repo_files``): `site/`, `.venv` or `slides/` are made by commands, not shipped."""
    tops = _top_level(repo_files) | {".github"}
    if ref.kind == "link":
        return "" if _exists(ref.value, files) else f"links to {ref.value}, which is not there"
    if ref.kind == "path":
        if ref.value.split("/", 1)[0] not in tops:
            return ""
        if _exists(ref.value, files) or _made_at_run_time(ref.value) or ref.value in WRITTEN_BY_RELEASE:
            return ""
        return f"names {ref.value}, which is not there"
    if ref.kind == "module":
        top = ref.value.split(".", 1)[0]
        if top == "pytest":
            return "" if _exists("tests", files) else "runs pytest, but the course's tests are not there"
        if top not in tops:
            return ""   # a tool the install provides (jupyter, pip, http.server)
        base = ref.value.replace(".", "/")
        ok = any(f in files for f in (f"{base}.py", f"{base}/__init__.py", f"{base}/__main__.py"))
        return "" if ok else f"runs the module {ref.value}, which is not there"
    if ref.kind == "flag":
        return "" if flag_owner(ref.value, files, repo_files) else \
            f"names the option {ref.value}, which no program there has"
    return ""


def flag_owner(flag: str, files: dict, repo_files) -> str:
    """The file among ``files`` whose program has option ``flag`` ("" if none): its source
    names the option (read as text, never imported). An option whose help names a folder of
    the repository that ``files`` lack (the judge's --solutions: solutions/) does not count."""
    tops = _top_level(repo_files)
    for path in sorted(files):
        if not path.endswith((".py", ".sh")):
            continue
        text = files[path].decode("utf-8", "replace")
        if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text):
            continue
        m = re.search(rf'"{re.escape(flag)}"[^)]*?help=(?:_\()?"([^"]*)"', text, re.S)  # help="..." or _("...")
        needs = re.findall(r"\b([\w.-]+)/", m.group(1)) if m else []
        if any(n in tops and not _exists(n, files) for n in needs):
            continue
        return path
    return ""


__all__ = ["student_edition", "references", "missing", "flag_owner", "Ref", "ReadmeError"]
