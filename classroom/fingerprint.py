"""A function's body as one comparable string: two functions with the same fingerprint
compute the same thing the same way, up to the names of arguments and local variables,
docstrings, comments, annotations and formatting (compared by AST). leaks.py finds model
answers with it; notebooks.py tells a student's own definition from the chapter's."""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

MIN_STATEMENTS = 1  # `return x` alone is not an answer; see is_trivial


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


def is_trivial(fn: ast.AST) -> bool:
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
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not is_trivial(node):
            out.append(Function(f"{where}:{node.lineno}", node.name, fingerprint(node)))
    return out


__all__ = ["Function", "fingerprint", "fingerprints", "is_trivial", "MIN_STATEMENTS"]
