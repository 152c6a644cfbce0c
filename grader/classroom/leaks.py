"""Find model answers in a tree of files: normalized function bodies, compared by AST.

A model answer leaks if any function in the student bundle (a .py file, or a code cell
of a notebook) has the same body as a function in solutions/, up to the names chosen for
arguments and local variables, docstrings, comments, annotations and formatting.
``fingerprints`` turns Python source into one string per function; two functions with
the same fingerprint compute the same thing the same way.

What this does not catch (said plainly, so nobody relies on it for more): the same
algorithm written with different statements. That is what a course teaches, and the
chapters show derivations; the judge's refusal of the course's reference (grader/child.py)
covers imports and source reads, and the release test checks it for every problem.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

MIN_STATEMENTS = 1  # `return x` alone is not an answer; see _is_trivial


@dataclass(frozen=True)
class Function:
    where: str      # "solutions/p04_choose_path.py:4" or "notebooks/04_x.ipynb cell 31"
    name: str
    fingerprint: str


class _Rename(ast.NodeTransformer):
    """Rename arguments and local variables to v0, v1, ... in order of first use, drop
    docstrings and annotations; global names (np, math, called helpers) stay."""

    def __init__(self, local_names: set[str]):
        self.local = local_names
        self.map: dict[str, str] = {}

    def _name(self, n: str) -> str:
        if n not in self.local:
            return n
        if n not in self.map:
            self.map[n] = f"v{len(self.map)}"
        return self.map[n]

    def visit_Name(self, node):
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self._name(node.arg)
        node.annotation = None
        node.type_comment = None
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        return node  # keyword names of calls are part of the callee's API: keep them

    def visit_FunctionDef(self, node):
        node.name = "f"
        node.returns = None
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.body = _strip_docstring(node.body)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node):
        new = ast.Assign(targets=[node.target], value=node.value or ast.Constant(None))
        return self.visit(ast.copy_location(new, node))


def _strip_docstring(body: list) -> list:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body or [ast.Pass()]


def _local_names(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def _is_trivial(fn: ast.AST) -> bool:
    """A body that says nothing about an answer: pass, ..., raise NotImplementedError."""
    body = _strip_docstring(list(fn.body))
    if len(body) != 1:
        return False
    st = body[0]
    if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)):
        return True
    if isinstance(st, ast.Raise) and st.exc is not None:
        exc = st.exc.func if isinstance(st.exc, ast.Call) else st.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def fingerprint(fn: ast.AST) -> str:
    import copy
    tree = copy.deepcopy(fn)
    tree = _Rename(_local_names(tree)).visit(tree)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def fingerprints(source: str, where: str) -> list[Function]:
    """One Function per (nested) function definition in ``source``; [] if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_trivial(node):
            out.append(Function(f"{where}:{node.lineno}", node.name, fingerprint(node)))
    return out


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


def find_leaks(answers: Path, bundle: Path) -> list[tuple[Function, Function]]:
    """(model answer, bundle function) pairs with equal fingerprints."""
    model = tree_functions(answers)
    by_print: dict[str, list[Function]] = {}
    for f in model:
        by_print.setdefault(f.fingerprint, []).append(f)
    hits = []
    for f in tree_functions(bundle):
        for m in by_print.get(f.fingerprint, []):
            hits.append((m, f))
    return hits


__all__ = ["Function", "fingerprint", "fingerprints", "tree_functions", "find_leaks", "notebook_sources"]
