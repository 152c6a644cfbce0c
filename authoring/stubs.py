"""The learner's stubs, practice/pNN_slug.py, generated from each problem's folder.

A stub is a header made from the spec (number, slug, summary, chapter, the judge's
commands) and the problem's stub template, grader/problems/pNN_slug/stub.py (its own
docstring: notes that follow the header; then the functions, each raising
NotImplementedError under its ``# TODO(problem N)``). practice/ is where the learner
works, so a file there is rewritten only while it is still a stub (``looks_like_stub``):
a learner's answer is never overwritten.
"""
from __future__ import annotations

import ast
from pathlib import Path

from grader import problems as layout
from grader.report import PROG
from grader.slips import code_of, docstring_of


def stub_text(problem, home: Path) -> str:
    """practice/pNN_slug.py as the spec and its stub template give it now."""
    path = Path(home) / layout.STUB
    if not path.is_file():
        raise FileNotFoundError(f"no stub template grader/problems/{Path(home).name}/{layout.STUB} "
                                "(the functions, each raising NotImplementedError under its TODO)")
    template = path.read_text(encoding="utf-8")
    notes = docstring_of(template)
    command = f"{PROG} {problem.number}"
    header = [f"Problem {problem.number} - {problem.slug}: {problem.summary}.", "",
              f"Chapter: {problem.chapter}",
              f"Check your answer: {command:<31} (hints: {command} --hint)",
              f"The whole statement: {command} --statement"]
    if notes:
        header += ["", notes]
    return '"""' + "\n".join(header) + '\n"""\n' + code_of(template)


def _starts_by_raising_not_implemented(fn: ast.AST) -> bool:
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def looks_like_stub(text: str, functions) -> bool:
    """The TODO is left and each asked-for function starts by raising NotImplementedError
    (what the judge calls "not started")."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return (bool(functions) and "TODO(problem" in text
            and all(f in defs and _starts_by_raising_not_implemented(defs[f]) for f in functions))


def write(problems, root: Path) -> tuple[list[Path], list[str]]:
    """Write every problem's stub where practice/ still holds a stub (or nothing).
    ([files written], [why each other one was left alone])."""
    written, kept = [], []
    for p in problems:
        path = Path(root) / "practice" / p.filename
        text = stub_text(p, Path(root) / "grader" / "problems" / p.stem)
        if path.is_file():
            now = path.read_text(encoding="utf-8")
            if now == text:
                continue
            if not looks_like_stub(now, p.functions):
                kept.append(f"practice/{p.filename} holds an answer: left as it is (the committed "
                            "stub is compared instead)")
                continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written, kept


__all__ = ["stub_text", "looks_like_stub", "write"]
