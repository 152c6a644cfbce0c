"""Find model answers in a tree of files: normalized function bodies, compared by AST.

A model answer leaks if any function in the student bundle (a .py file, or a code cell
of a notebook) has the same body as a function in solutions/, up to the names chosen for
arguments and local variables, docstrings, comments, annotations and formatting.
``fingerprints`` turns Python source into one string per function; two functions with
the same fingerprint compute the same thing the same way.

What this does not catch (said plainly, so nobody relies on it for more): the same
algorithm written with different statements. That is what a course teaches, and the
chapters show derivations; the judge's refusal of the course's reference (grader/child/)
covers imports and source reads, and the release test checks it for every problem.
Course code pasted by hand is the other route: ``pasted_attempts`` below builds those
files (the release test grades them), and ``course_code_run`` says which course code a
problem's reference runs (docs/teaching.md lists it: what a release leaves open).
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .fingerprint import Function, fingerprint, fingerprints, is_trivial

def notebook_sources(path: Path) -> list[tuple[str, str]]:
    """(where, source) for each code cell; IPython magics are commented out so the rest parses."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        lines = ["# " + ln if ln.lstrip().startswith(("%", "!")) else ln for ln in src.splitlines()]
        out.append((f"{path.name} cell {i}", "\n".join(lines)))
    return out


def tree_functions(root: Path) -> list[Function]:
    """Every function in every .py file and notebook code cell under ``root``."""
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if path.suffix == ".py":
            found += fingerprints(path.read_text(encoding="utf-8", errors="replace"), rel)
        elif path.suffix == ".ipynb":
            for where, src in notebook_sources(path):
                found += fingerprints(src, f"{rel} {where.split(' ', 1)[1]}")
    return found


def given_by_stubs(practice: Path) -> set[str]:
    """Fingerprints of the functions the stubs give once their NotImplementedError lines
    are deleted (problem 12's launcher): code every attempt holds, not an answer."""
    import copy
    given = set()
    for path in sorted(practice.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fn = copy.deepcopy(node)
                fn.body = [st for st in fn.body if not _raises_not_implemented(st)]
                if fn.body and not is_trivial(fn):
                    given.add(fingerprint(fn))
    return given


def _raises_not_implemented(st: ast.AST) -> bool:
    exc = getattr(st, "exc", None) if isinstance(st, ast.Raise) else None
    exc = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def find_leaks(answers: Path, bundle: Path) -> list[tuple[Function, Function]]:
    """(model answer, bundle function) pairs with equal fingerprints, leaving out what the
    bundle's stubs give (given_by_stubs)."""
    given = given_by_stubs(bundle / "practice")
    model = [f for f in tree_functions(answers) if f.fingerprint not in given]
    by_print: dict[str, list[Function]] = {}
    for f in model:
        by_print.setdefault(f.fingerprint, []).append(f)
    hits = []
    for f in tree_functions(bundle):
        for m in by_print.get(f.fingerprint, []):
            hits.append((m, f))
    return hits




# --------------------------------------------------------------------------- pasted answers
#
# The comparison above finds copies of solutions/. What it cannot find is course code that
# computes a problem's answer -- the judge's own reference, or a course function that
# carries a problem's function name -- pasted into a practice file. ``pasted_attempts``
# writes each such function as a learner would paste it: its source and everything it
# needs from its own file (imports, functions, classes, assignments: the same extraction
# `grade` applies to a notebook hand-in, notebooks.extract), relative imports made
# absolute, and under the problem's function name. The release test grades every one of
# them with the bundle's judge and expects none to pass.

CODE_DIRS = ("mlacourse/", "kernels/", "grader/")   # searched for functions, with notebooks/
COURSE_PACKAGES = ("mlacourse", "kernels")          # the course's code, as a reference reaches it


@dataclass
class Pasted:
    """A practice file made of code the bundle ships, as a learner would paste it."""
    problem: int
    functions: dict      # {the problem's function name: the name it has where it was found}
    where: str           # the bundle file it comes from: "mlacourse/engine/pages.py"
    why: str             # "the spec's reference" or "a function with the problem's name"
    source: str = ""     # the practice file ("" when it could not be built)
    refused: str = ""    # why it could not be built

    @property
    def label(self) -> str:
        names = ", ".join(f if f == g else f"{g} as {f}" for f, g in self.functions.items())
        return f"problem {self.problem}: {names} from {self.where} ({self.why})"


def _module_name(rel: str) -> str:
    return rel[:-3].replace("/", ".")


def _module_name_to_file(module: str) -> str:
    return module.replace(".", "/") + ".py"


def absolute_imports(source: str, rel: str) -> str:
    """``source`` of the bundle file ``rel`` with every relative import made absolute
    (``from ..paged import x`` -> ``from mlacourse.paged import x``): what a learner who
    pastes the file must write for it to run at all."""
    tree = ast.parse(source)
    lines = source.split("\n")
    package = _module_name(rel).split(".")   # the module's own name; level 1 is its package
    found = sorted((n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level),
                   key=lambda n: n.lineno, reverse=True)
    for node in found:
        base = package[:len(package) - node.level]
        module = ".".join(base + ([node.module] if node.module else []))
        indent = lines[node.lineno - 1][:len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())]
        text = indent + ast.unparse(ast.ImportFrom(module=module, names=node.names, level=0))
        lines[node.lineno - 1:node.end_lineno] = [text]
    return "\n".join(lines)


def _as_notebook(*cells: str) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c}
        for c in cells]}).encode("utf-8")


def _paste(bundle: Path, rel: str, problem, functions: dict) -> tuple[str, str]:
    """(practice file, "") or ("", why not): the functions of ``rel`` (a .py file or a
    chapter), renamed to the problem's names, with what they need from that file."""
    from types import SimpleNamespace

    from . import notebooks
    data = (bundle / rel).read_bytes()
    if rel.endswith(".py"):
        try:
            source = absolute_imports(data.decode("utf-8"), rel)
        except (SyntaxError, UnicodeDecodeError) as e:
            return "", f"{rel} does not parse ({e})"
        renames = "\n".join(f"{f} = {g}" for f, g in functions.items() if f != g)
        data = _as_notebook(source, renames) if renames else _as_notebook(source)
    wanted = SimpleNamespace(number=problem.number, slug=problem.slug, functions=list(functions))
    ex = notebooks.extract(notebooks.read_notebook(rel, data), wanted)
    if ex.refused:
        return "", ex.refused
    body = ex.source.split("\n\n", 1)[1] if "\n\n" in ex.source else ex.source  # without the hand-in header
    if rel.endswith(".py"):   # "# cell 1, line 46" is line 46 of the file; cell 2 holds the renames
        body = re.sub(r"^# cell 1, line (\d+)$", rf"# {rel}, line \1", body, flags=re.M)
        body = re.sub(r"^# cell 2, line \d+$", "# under the problem's name", body, flags=re.M)
    head = (f"# Problem {problem.number} ({problem.slug}) pasted from the bundle's {rel}: "
            f"{', '.join(functions.values())} and what {'they need' if len(functions) > 1 else 'it needs'} "
            f"from that file.\n")
    return head + body, ""


def defined_functions(root: Path) -> dict:
    """{function name: [bundle files defining it at top level]} over the code a bundle
    ships: .py files under CODE_DIRS and the chapters' code cells."""
    from . import notebooks
    found: dict = {}
    paths = [p for top in CODE_DIRS + ("notebooks/",) if (root / top).is_dir() for p in (root / top).rglob("*")]
    for path in sorted(paths):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or "/." in "/" + rel or "__pycache__" in rel:
            continue
        names = []
        if path.suffix == ".py" and rel.startswith(CODE_DIRS):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        elif path.suffix == ".ipynb" and rel.startswith("notebooks/"):
            nb = notebooks.read_notebook(rel, path.read_bytes())
            names = [name for name, sts in nb.bound.items() if any(s.kind == "def" for s in sts)]
        for name in names:
            found.setdefault(name, []).append(rel)
    return found


def pasted_attempts(bundle: Path, problems) -> list[Pasted]:
    """Every practice file a learner could paste from the bundle for each problem: the
    spec's reference (wherever it lives) under the problem's function names, and each file
    that defines some of the problem's functions by name. The list comes from the specs
    (``Problem.reference``, ``Problem.functions``): a new problem is covered by itself."""
    names = defined_functions(bundle)
    out = []
    for p in problems:
        by_file: dict = {}
        for fn, ref in (p.reference or {}).items():
            rel = _module_name_to_file(getattr(ref, "__module__", "") or "")
            by_file.setdefault(rel, {})[fn] = getattr(ref, "__qualname__", getattr(ref, "__name__", repr(ref)))
        jobs = [(rel, fns, "the spec's reference") for rel, fns in by_file.items()]
        for fn in p.functions:
            for rel in names.get(fn, []):
                if not any(r == rel and fns.get(fn) == fn for r, fns, _ in jobs):
                    jobs.append((rel, {fn: fn}, "a function with the problem's name"))
        merged: dict = {}
        for rel, fns, why in jobs:   # one file per (where, why): a file with both functions pastes both
            merged.setdefault((rel, why), {}).update(fns)
        for (rel, why), fns in merged.items():
            item = Pasted(p.number, fns, rel, why)
            if not (bundle / rel).is_file():
                item.refused = f"{rel} is not in the bundle"
            elif any("." in g or "<" in g for g in fns.values()):
                item.refused = f"the reference is not a top-level function of {rel}: {fns}"
            else:
                item.source, item.refused = _paste(bundle, rel, p, fns)
            out.append(item)
    return out


# --------------------------------------------------------------------------- what a release leaves open

def _in_course(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] in COURSE_PACKAGES


def _course_name(obj) -> str:
    return f"{obj.__module__}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _resolve(node, names: dict):
    """The object an expression of a reference names (``scheduler.Scheduler(...).plan`` ->
    the function Scheduler.plan), or None where it cannot be known without running it."""
    import builtins
    if isinstance(node, ast.Name):
        return names.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, names)
        return getattr(base, node.attr, None) if base is not None else None
    if isinstance(node, ast.Call):   # a class called gives an instance: its methods are the class's
        made = _resolve(node.func, names)
        return made if isinstance(made, type) else None
    return None


def course_code_run(reference) -> list[str]:
    """The course's functions and classes (mlacourse, kernels) a spec's reference runs,
    read from its source and the helpers of its own module that it calls, in the order
    they appear: ["mlacourse.engine.scheduler.Scheduler", "mlacourse.engine.scheduler.Scheduler.plan"].
    A reference that is itself course code gives its own name."""
    import inspect
    import textwrap
    if _in_course(reference):
        return [_course_name(reference)]
    found, todo, seen = [], [reference], set()
    while todo:
        fn = todo.pop(0)
        if fn in seen:
            continue
        seen.add(fn)
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            continue
        names = dict(getattr(fn, "__globals__", {}))
        for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)),
                           key=lambda n: (n.lineno, n.col_offset)):
            obj = _resolve(node.func, names)
            if obj is None:
                continue
            if _in_course(obj) and (inspect.isfunction(obj) or inspect.isclass(obj)):
                if _course_name(obj) not in found:
                    found.append(_course_name(obj))
            elif inspect.isfunction(obj) and obj.__module__ == reference.__module__:
                todo.append(obj)   # a helper of the spec: what it runs counts too
    return found


__all__ = ["Function", "fingerprint", "fingerprints", "tree_functions", "find_leaks", "notebook_sources",
           "given_by_stubs", "Pasted", "absolute_imports", "defined_functions", "pasted_attempts", "course_code_run"]


# --------------------------------------------------------------------------- near answers
#
# A function one statement away from a model answer is an answer for anyone who finds the
# statement: a chapter's demo of a wrong attempt pasted from solutions/, a helper left
# with one line changed. ``near_answers`` compares every function of a bundle with every
# model answer as a sequence of statements (each with its nesting depth, without the
# statements nested in it), once with the names as written and once with arguments and
# locals renamed in order of first use (fingerprint's renaming): a function whose sequence
# differs from a model answer's by one statement inserted, deleted or changed is a near
# answer, and the release refuses the bundle (classroom/release.py), the named mistakes'
# folder included. What it cannot see: a right answer written differently from solutions/
# with one slip -- which is what a named mistake's file is. Those do not ship (their
# recorded answers do: grader/recorded.py), and tests/test_classroom_release.py checks
# by grading that no bundled .py file passes a problem with one of its lines deleted.

MIN_NEAR_STATEMENTS = 3   # a model answer of fewer statements is one statement from anything


@dataclass
class Near:
    model: Function
    found: Function
    how: str             # "one statement changed", "one statement more", "one statement less"


def statement_lines(fn: ast.AST, renamed: bool) -> list[str]:
    """The function's statements in order, each as its depth and its own text (the
    statements nested in it left out): the unit a one-line edit changes."""
    import copy as _copy
    tree = _copy.deepcopy(fn)
    if renamed:
        from .fingerprint import _local_names, _Rename
        tree = _Rename(_local_names(tree)).visit(tree)
    out = []

    def walk(body, depth):
        for st in body:
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue   # a docstring or a bare string: says nothing
            shallow = _copy.copy(st)
            nested = []
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                if isinstance(getattr(st, field, None), list):
                    nested.append(getattr(st, field))
                    setattr(shallow, field, [])
            out.append(f"{depth}:{ast.dump(shallow, annotate_fields=False, include_attributes=False)}")
            for block in nested:
                items = [getattr(h, "body", [h]) for h in block] if block and not isinstance(block[0], ast.stmt) else [block]
                for b in items:
                    walk(b, depth + 1)

    walk(tree.body, 0)
    return out


def _one_edit(a: list, b: list) -> str:
    """How ``b`` differs from ``a`` by one statement ("" when it does not, or not at all)."""
    if a == b:
        return ""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    q = 0
    while q < min(len(a), len(b)) - p and a[-1 - q] == b[-1 - q]:
        q += 1
    la, lb = len(a) - p - q, len(b) - p - q
    if la == 1 and lb == 1:
        return "one statement changed"
    if la == 0 and lb == 1:
        return "one statement more"
    if la == 1 and lb == 0:
        return "one statement less"
    return ""


def _functions_with_trees(source: str, where: str):
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return []
    return [(Function(f"{where}:{n.lineno}", n.name, ""), n) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _tree_sources(root: Path):
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if path.suffix == ".py":
            yield rel, path.read_text(encoding="utf-8", errors="replace")
        elif path.suffix == ".ipynb":
            for where, src in notebook_sources(path):
                yield f"{rel} {where.split(' ', 1)[1]}", src


def near_answers(answers: Path, bundle: Path) -> list[Near]:
    """Every function of ``bundle`` (.py files, chapters' code cells) one statement away
    from a model answer in ``answers`` (see above), leaving out what the stubs give."""
    given = given_by_stubs(bundle / "practice")
    models = []
    for rel, src in _tree_sources(answers):
        for f, node in _functions_with_trees(src, rel):
            if is_trivial(node) or fingerprint(node) in given:
                continue
            lines = (statement_lines(node, False), statement_lines(node, True))
            if len(lines[0]) >= MIN_NEAR_STATEMENTS:
                models.append((f, lines))
    hits = []
    for rel, src in _tree_sources(bundle):
        for f, node in _functions_with_trees(src, rel):
            if is_trivial(node):
                continue
            try:
                mine = (statement_lines(node, False), statement_lines(node, True))
            except RecursionError:
                continue
            for m, theirs in models:
                if abs(len(mine[0]) - len(theirs[0])) > 1:
                    continue
                how = _one_edit(theirs[0], mine[0]) or _one_edit(theirs[1], mine[1])
                if how:
                    hits.append(Near(m, f, how))
    return hits


__all__ += ["near_answers", "Near", "statement_lines"]
