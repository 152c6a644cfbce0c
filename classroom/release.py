"""Build the student bundle: a folder and a zip with everything but the model answers.

    python -m classroom release --out dist/

What goes in (``INCLUDE``): the chapters, the practice stubs and the judge (with its
public and hidden case generators: a teacher's secret seed, never shipped, is what makes
the hidden cases unseen), the course's packages (mlacourse, kernels: the chapters import
them), README, setup.sh and requirements. What stays out: solutions/, the tests (they
import the solutions), the teacher's tools (classroom/, with the Gradescope autograder),
docs/, .github/, caches, and git history.

The files come from the last commit (``git archive``-like, so a teacher's uncommitted
edits -- say a practice file they solved -- never ship) when the course is a git
checkout, else from the folder as it is. Of each problem's folder (grader/problems/pNN_slug/)
only its spec ships (grader.problems.shipped): its bases (right answers), its named mistakes
(each a right answer with one slip), its stub template and its corpus stay out; in their
place the folder gets mistakes.json, the mistakes' answers on the public cases computed now
(grader/recorded.py), from which the bundle's judge still names a mistake an attempt makes
on a public case. Before writing anything
the build checks that (1) every practice stub still raises NotImplementedError in every
graded function, (2) no function in the bundle has a model answer's body, and (3) none is
one statement away from one (classroom/leaks.py: find_leaks, near_answers; the problems'
folders are scanned like everything else), apart from the reference implementation
(mlacourse) and the entries in ``ALLOWED``, each with its reason. The zip is
reproducible: sorted entries, fixed dates and modes.

The reference itself must ship (the bundle's judge grades with it), so no release can
hide a problem's algorithm from a student who reads it: docs/teaching.md lists, from the
specs, the course code each problem's reference runs. What the tests guarantee is that
none of it is a drop-in answer: every spec's reference and every function of the bundle
with a problem's function name, pasted as a practice file (leaks.pasted_attempts), fails
the bundle's judge (tests/test_classroom_release.py).
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import stat
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from grader import problems as problems_layout

from . import leaks, readme

ROOT = Path(__file__).resolve().parent.parent
BUNDLE_NAME = "mla-course-student"
LANGS = ("en", "zh")
# the judge's default language in a bundle (the judge reads it when neither --lang nor
# LANG/LC_MESSAGES chooses one): written by `release --lang zh`
JUDGE_LANG_FILE = readme.JUDGE_LANG_FILE   # "practice/.judge_lang", one line: zh_CN
JUDGE_LANG = {"zh": "zh_CN"}

# top-level entries copied into the bundle (folders recursively)
INCLUDE = ["README.md", "README.zh.md", "setup.sh", "requirements.txt", "requirements-light.txt", "pyproject.toml", ".gitignore", "judge.py",
           "grader", "mlacourse", "kernels", "notebooks", "practice"]
# never copied, wherever they are (relative path prefixes, then name patterns)
EXCLUDE_PREFIXES = ("solutions/", "tests/")
EXCLUDE_NAMES = re.compile(r"(^|/)(__pycache__|\.ipynb_checkpoints|\.git|\.venv|\.pytest_cache|"
                           r"\.hypothesis)(/|$)|\.py[co]$|(^|/)\.judge_hints\.txt$|"
                           r"(^|/)practice/results\.json$|\.DS_Store$")
EXECUTABLE = {"setup.sh", "judge.py", "practice/judge.py"}
ZIP_DATE = (2020, 1, 1, 0, 0, 0)

# Model-answer bodies the bundle may contain, with the reason. A hit not listed here
# stops the release. mlacourse/ is the reference itself (kept on purpose: the chapters
# import it, and the judge refuses graded code that imports or reads it).
ALLOWED = {
    ("choose_path", "notebooks/04_flops_and_path_choice.ipynb"):
        "chapter 4's judge demo (section 4.9) pairs a wrong attention_flops with the two-line "
        "choose_path that compares the two counts; the graded work of problem 4 is the count",
}
REFERENCE_DIRS = ("mlacourse/",)
# what of the problems' folders stays out (grader.problems.shipped), in words
HOMES = "grader/problems/*/"
HOMES_NOTE = (f"each problem's folder ships only {problems_layout.SPEC} and {problems_layout.RECORDED}, "
              "its named mistakes' answers on the public cases")


@dataclass
class Release:
    folder: Path
    zip_path: Path
    files: list                      # relative posix paths in the bundle
    source: str                      # "git <commit>" or "worktree"
    warnings: list = field(default_factory=list)
    allowed_hits: list = field(default_factory=list)  # (answer, where, reason)
    left_out: list = field(default_factory=list)      # what of the repository stays out, in words

    def manifest(self) -> dict:
        digests = {f: hashlib.sha256((self.folder / f).read_bytes()).hexdigest() for f in self.files}
        return {"bundle": self.folder.name, "source": self.source, "files": digests,
                "allowed_answer_bodies": [list(h) for h in self.allowed_hits]}


class ReleaseError(RuntimeError):
    """The bundle would leak an answer or ship a solved stub: nothing was written."""


# --------------------------------------------------------------------------- what to copy

def wanted(rel: str) -> bool:
    top = rel.split("/", 1)[0]
    if top not in INCLUDE and rel not in INCLUDE:
        return False
    if rel.startswith(EXCLUDE_PREFIXES) or EXCLUDE_NAMES.search(rel):
        return False
    if top == "practice" and not rel.endswith(".py"):
        return False   # the stubs and the judge entry only (no results, states, or a stray seed file)
    if not problems_layout.shipped(rel):
        return False   # bases, slips, corpus: answers or one line away; recorded_mistakes() instead
    return True


def _git(root: Path, *args: str) -> bytes | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def collect(root: Path = ROOT, source: str = "auto") -> tuple[dict, str, list]:
    """{relative path: bytes} of the files to ship, where they came from, and warnings.
    source: "git" (the last commit), "worktree" (the folder as it is) or "auto"."""
    warnings = []
    head = _git(root, "rev-parse", "HEAD") if source in ("auto", "git") else None
    if source == "git" and head is None:
        raise ReleaseError(f"{root} is not a git checkout with a commit; use --from-worktree")
    if head is not None:
        commit = head.decode().strip()
        listing = _git(root, "ls-tree", "-r", "-z", "--name-only", "HEAD") or b""
        files = {}
        for name in listing.decode().split("\0"):
            if name and wanted(name):
                blob = _git(root, "show", f"HEAD:{name}")
                if blob is not None:
                    files[name] = blob
        dirty = _git(root, "status", "--porcelain", "--", *INCLUDE) or b""
        changed = [ln[3:] for ln in dirty.decode().splitlines() if wanted(ln[3:].strip('"'))]
        if changed:
            warnings.append(f"built from commit {commit[:12]}; these uncommitted changes are NOT in "
                            f"the bundle: {', '.join(changed[:8])}" + (" ..." if len(changed) > 8 else ""))
        return files, f"git {commit}", warnings
    files = {}
    for top in INCLUDE:   # only the shipped folders are walked (not .venv and its 50,000 files)
        start = root / top
        for path in sorted([start] if start.is_file() else start.rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not path.is_symlink() and wanted(rel):
                files[rel] = path.read_bytes()
    return files, "worktree", warnings


# --------------------------------------------------------------------------- checks

def problems():
    from grader import runner
    errors: list = []
    found = runner.discover(errors)
    if errors:
        raise ReleaseError("problem specs failed to load: " + "; ".join(f"{e.module}: {e.message}" for e in errors))
    return found


def unsolved_stub_problems(files: dict) -> list[str]:
    """Why each practice stub is not a clean stub (missing, or a graded function that does
    not raise NotImplementedError); [] when all are."""
    bad = []
    for p in problems():
        rel = f"practice/{p.filename}"
        if rel not in files:
            bad.append(f"{rel} is missing")
            continue
        try:
            tree = ast.parse(files[rel].decode("utf-8"))
        except (SyntaxError, UnicodeDecodeError) as e:
            bad.append(f"{rel} does not parse ({e})")
            continue
        defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for fn in p.functions:
            node = defs.get(fn)
            if node is None:
                bad.append(f"{rel} does not define {fn}")
            elif not any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.dump(n)
                         for n in ast.walk(node)):
                bad.append(f"{rel}: {fn} does not raise NotImplementedError (a solved stub?)")
    return bad


def source_file(where: str) -> str:
    """The file a hit or an attempt comes from ("notebooks/04_x.ipynb cell 38:13" ->
    "notebooks/04_x.ipynb"); the Chinese edition of a chapter counts as the chapter."""
    return where.split(":", 1)[0].split(" cell ", 1)[0].replace("notebooks/zh/", "notebooks/")


def allowance(answer: str, where: str) -> str | None:
    """Why the model answer ``answer``'s body may stand at ``where`` (None: it may not)."""
    where = source_file(where)
    if where.startswith(REFERENCE_DIRS):
        return "the course's reference implementation (import refused by the judge)"
    return ALLOWED.get((answer, where))


def leak_report(bundle: Path, answers: Path) -> tuple[list, list]:
    """(forbidden hits, allowed hits) of model-answer bodies in the bundle, and of
    functions one statement away from one (leaks.near_answers)."""
    bad, ok = [], []
    for model, hit in leaks.find_leaks(answers, bundle):
        why = allowance(model.name, hit.where)
        if why is not None:
            ok.append((model.name, hit.where, why))
        else:
            bad.append(f"{hit.where} ({hit.name}) has the body of the model answer {model.where} ({model.name})")
    for near in leaks.near_answers(answers, bundle):
        why = allowance(near.model.name, near.found.where)
        if why is not None:
            ok.append((near.model.name, near.found.where, f"{near.how}: {why}"))
        else:
            bad.append(f"{near.found.where} ({near.found.name}) is the model answer {near.model.where} "
                       f"({near.model.name}) with {near.how}")
    return bad, ok


def recorded_mistakes() -> dict:
    """{bundle path: bytes}: each problem's named mistakes as answers recorded on its
    public cases (grader/recorded.py), in place of their files."""
    from . import mistakes
    out = {}
    for p in problems():
        data = json.dumps(mistakes.record(p), sort_keys=True, separators=(",", ":")) + "\n"
        out[f"grader/problems/{p.stem}/{problems_layout.RECORDED}"] = data.encode("utf-8")
    return out


# --------------------------------------------------------------------------- the student README

def repository_files(root: Path = ROOT) -> set[str]:
    """Every file of the repository (tracked files; without git, the folder minus tool
    folders): what the README may name, of which the bundle ships a part."""
    listing = _git(root, "ls-files", "-z")
    if listing is not None:
        return {n for n in listing.decode().split("\0") if n}
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and not EXCLUDE_NAMES.search(p.relative_to(root).as_posix())
            and not p.relative_to(root).parts[0] in (".venv", "site", "dist", "slides")}


def left_out(repo_files, files) -> list[str]:
    """The repository's top-level entries (and the named mistakes' files) the bundle leaves out,
    whole or in part, as a teacher should read them: "solutions/", ".github/ (the bundle
    has its own .github/workflows/classroom.yml)"."""
    repo_files, shipped = set(repo_files), set(files)
    groups: dict = {}
    for f in sorted(repo_files):
        key = HOMES.rstrip("/") if not problems_layout.shipped(f) else f.split("/", 1)[0]
        groups.setdefault(key, []).append(f)
    out = []
    for key, members in sorted(groups.items()):
        kept = [f for f in members if f in shipped]
        if len(kept) == len(members):
            continue
        extra = sorted(f for f in shipped if f.startswith(key + "/") and f not in repo_files)
        notes = ([f"all but {', '.join(k[len(key) + 1:] for k in kept)}"] if kept else []) + \
                ([f"the bundle has its own {', '.join(extra)}"] if extra else [])
        if key + "/" == HOMES:   # kept: each folder's spec; added: its recorded mistakes
            notes = [HOMES_NOTE]
            kept = []
        name = key if members == [key] else key + "/"
        out.append(name + (f" ({'; '.join(notes)})" if notes else ""))
    return out


def student_readme(files: dict, root: Path = ROOT, source: str = "README.md") -> str:
    """The bundle's README: README.md's (or README.zh.md's) student edition (readme.py)
    for these files."""
    return readme.student_edition(files[source].decode("utf-8"), files, repository_files(root))


def _switch_to(text: str, old: str, new: str) -> str:
    """The language switch (the README's second paragraph) pointed at another file name."""
    head, sep, rest = text.partition("\n\n")
    switch, sep2, tail = rest.partition("\n\n")
    if f"]({old})" not in switch:
        raise ReleaseError(f"the README's second paragraph is not the language switch to {old}: {switch[:80]!r}")
    return head + sep + switch.replace(f"]({old})", f"]({new})") + sep2 + tail


def student_readmes(files: dict, root: Path = ROOT, lang: str = "en") -> dict:
    """{bundle path: text} of the bundle's two READMEs. English bundle: README.md (English)
    and README.zh.md (Chinese), as in the repository. Chinese bundle: README.md is the
    Chinese edition (the file a student opens first) and README.en.md the English one,
    each one's language switch pointing at the other."""
    english = student_readme(files, root, "README.md")
    chinese = student_readme(files, root, "README.zh.md") if "README.zh.md" in files else None
    if lang == "en":
        return {"README.md": english, **({"README.zh.md": chinese} if chinese else {})}
    if chinese is None:
        raise ReleaseError("--lang zh needs README.zh.md (python -m i18n build docs)")
    return {"README.md": _switch_to(chinese, "README.md", "README.en.md"),
            "README.en.md": _switch_to(english, "README.zh.md", "README.md")}


# --------------------------------------------------------------------------- writing

def _mode(rel: str) -> int:
    return 0o755 if rel in EXECUTABLE else 0o644


def write_zip(folder: Path, files: list, zip_path: Path) -> None:
    """A reproducible zip: a top folder, sorted entries, fixed dates and modes."""
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for rel in sorted(files):
            info = zipfile.ZipInfo(f"{folder.name}/{rel}", date_time=ZIP_DATE)
            info.external_attr = (stat.S_IFREG | _mode(rel)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (folder / rel).read_bytes())


def build(out: Path, root: Path = ROOT, source: str = "auto", github_classroom: bool = False,
          name: str | None = None, lang: str = "en") -> Release:
    """Check, then write out/<name>/ and out/<name>.zip (replacing earlier ones). ``lang``
    "zh": the README a student opens is the Chinese one (README.en.md beside it), and
    practice/.judge_lang makes Chinese the judge's default language; both languages'
    chapters ship either way (notebooks/ and notebooks/zh/). The default name is
    mla-course-student, with -zh for the Chinese bundle."""
    if lang not in LANGS:
        raise ReleaseError(f"no student bundle in language {lang!r} (there are: {', '.join(LANGS)})")
    name = name or (BUNDLE_NAME if lang == "en" else f"{BUNDLE_NAME}-{lang}")
    files, origin, warnings = collect(root, source)
    if github_classroom:
        from .platforms import workflow_text
        files[".github/workflows/classroom.yml"] = workflow_text().encode("utf-8")
    try:
        readmes = student_readmes(files, root, lang)
    except readme.ReadmeError as e:
        raise ReleaseError(str(e)) from None
    files.pop("README.zh.md", None)
    files.update({path: text.encode("utf-8") for path, text in readmes.items()})
    if lang in JUDGE_LANG:
        files[JUDGE_LANG_FILE] = (JUDGE_LANG[lang] + "\n").encode("utf-8")
    files.update(recorded_mistakes())
    bad = unsolved_stub_problems(files)
    if bad:
        raise ReleaseError("practice/ is not a set of clean stubs:\n  " + "\n  ".join(bad))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    folder = out / name
    staging = out / f".{name}.building"
    if staging.exists():
        shutil.rmtree(staging)
    for rel, data in files.items():
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        dest.chmod(_mode(rel))
    answers = root / "solutions"
    if not answers.is_dir():
        warnings.append(f"no {answers}: the bundle was not scanned for model answers")
    forbidden, allowed = leak_report(staging, answers) if answers.is_dir() else ([], [])
    if forbidden:
        shutil.rmtree(staging)
        raise ReleaseError("the bundle would contain model answers:\n  " + "\n  ".join(forbidden))
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
    zip_path = out / f"{name}.zip"
    write_zip(folder, list(files), zip_path)
    shipped = {**files, **({"README.zh.md": b""} if lang == "zh" else {})}   # as README.md
    rel = Release(folder, zip_path, sorted(files), origin, warnings, allowed,
                  left_out(repository_files(root), shipped))
    (out / f"{name}.manifest.json").write_text(json.dumps(rel.manifest(), indent=1, sort_keys=True) + "\n")
    return rel


def zip_names(zip_path: Path) -> list[str]:
    with zipfile.ZipFile(zip_path) as zf:
        return zf.namelist()


__all__ = ["build", "collect", "wanted", "student_readme", "leak_report", "allowance", "source_file",
           "unsolved_stub_problems", "Release", "ReleaseError", "ALLOWED", "BUNDLE_NAME", "zip_names",
           "student_readmes", "LANGS", "JUDGE_LANG_FILE"]
