"""The judge's launch of a learner's Triton kernel (problem 12), run in the child.

The point of problem 12 is the kernel. Whether an answer came from it cannot be decided by
watching the learner's own launcher run: that code shares its process with whatever the
judge installs there, and can undo it. So the judge launches the kernel itself, in a
process of its own (a second pass over the same cases, grader/plan.py), where no line of
the learner's file runs except the kernel:

  ``kernel_module``  reads the file as text, keeps its ``@triton.jit`` functions, the
                     imports of triton and module-level number constants -- each at its own
                     line, so errors point at the learner's lines -- and refuses a kernel
                     that reaches for anything else (``NotAKernel``: the line and the name);
  ``launch_with``    the problem's own launcher (the spec's source) bound to that kernel.

What a kernel may use (the statement says so): its arguments and locals, ``triton`` and
``triton.language`` (any alias; names without a leading underscore), the other
``@triton.jit`` functions of the file, module-level number constants, a few builtins
(``range``, ``float``, ``int``, ``min``, ``max``, ``abs``, ``bool``) and the tensor methods
in ``TENSOR_ATTRS``. No imports, no other names, no lambdas or comprehensions, no
attribute that starts with an underscore: nothing in the kernel's body can reach a Python
object beyond triton's own, in Triton's CPU interpreter either.

Part of the child's package; imported only for the problems that launch a kernel
(``Problem.kernel``).
"""
from __future__ import annotations

import ast
import importlib.util
import os
import sys

BUILTINS = frozenset({"range", "float", "int", "min", "max", "abs", "bool"})
TENSOR_ATTRS = frozenset({"to", "T", "dtype", "shape", "reshape", "trans", "permute", "broadcast_to",
                          "expand_dims", "sum", "max", "min", "argmax", "argmin", "cast", "view",
                          "element_ty"})
# the triton modules a kernel may name attributes of (any other module reached through one --
# tl.core, triton.runtime -- is refused: a module is where Python's own machinery lies)
MODULES = ("triton", "triton.language", "triton.language.math")
_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.For, ast.While, ast.If,
               ast.Return, ast.Pass, ast.Break, ast.Continue, ast.Assert)
_EXPRESSIONS = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
                ast.Call, ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.List, ast.keyword,
                ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
_TRITON = MODULES


class NotAKernel(ValueError):
    """The file's kernel cannot be launched by the judge: the message names the line."""


def _module_aliases(tree: ast.Module) -> dict:
    """{name in the file: the triton module it is} from its top-level imports."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in _TRITON:
                    out[a.asname or a.name.split(".")[0]] = a.name if a.asname else "triton"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in _TRITON:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in _TRITON or a.name == "jit":
                    out[a.asname or a.name] = full
    return out


def _is_jit(decorator, aliases: dict) -> bool:
    """@triton.jit, @triton.jit(...), or @jit imported from triton."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return aliases.get(target.value.id) == "triton" and target.attr == "jit"
    return isinstance(target, ast.Name) and aliases.get(target.id) == "triton.jit"


def _number_constant(value) -> bool:
    """A literal number, or arithmetic of them (BLOCK_T = 16, SCALE = 1 / 8, N = 2 ** 4)."""
    if isinstance(value, ast.Constant):
        return type(value.value) in (int, float, bool)
    if isinstance(value, ast.UnaryOp):
        return _number_constant(value.operand)
    if isinstance(value, ast.BinOp):
        return _number_constant(value.left) and _number_constant(value.right)
    return False


def _constant_names(tree: ast.Module) -> dict:
    """{name: node} of top-level ``NAME = <number>`` (or ``NAME: tl.constexpr = <number>``)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:
                value = value.args[0]   # tl.constexpr(16)
            if _number_constant(value):
                out[node.targets[0].id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None \
                and _number_constant(node.value):
            out[node.target.id] = node
    return out


class _Checker(ast.NodeVisitor):
    """Walks one @triton.jit function; raises NotAKernel at the first thing it refuses."""

    def __init__(self, fn: ast.FunctionDef, aliases: dict, globals_ok: set, path: str):
        self.fn, self.aliases, self.path = fn, aliases, path
        self.names = set(globals_ok) | BUILTINS | set(aliases)
        args = fn.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            self.names.add(a.arg)
        if args.vararg or args.kwarg:
            self._refuse(fn, "*args or **kwargs")
        for node in ast.walk(fn):   # every name the body assigns is a local
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.names.add(node.id)

    def _refuse(self, node, what: str):
        raise NotAKernel(f"{os.path.basename(self.path)}, line {getattr(node, 'lineno', self.fn.lineno)}, in "
                         f"{self.fn.name}: {what} -- a kernel the judge launches may use only its arguments, "
                         "triton and triton.language, other @triton.jit functions of the file, number "
                         "constants and range/float/int/min/max/abs/bool")

    def check(self):
        for d in self.fn.args.defaults + self.fn.args.kw_defaults:
            if d is not None and not _number_constant(d) and not (isinstance(d, ast.Constant) and d.value is None):
                self._refuse(d, "a default that is not a number")
        for a in [*self.fn.args.posonlyargs, *self.fn.args.args, *self.fn.args.kwonlyargs]:
            if a.annotation is not None:
                self._expression(a.annotation)
        for stmt in self.fn.body:
            self._statement(stmt)

    def _statement(self, node):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return   # a docstring
        if not isinstance(node, _STATEMENTS):
            self._refuse(node, f"a {type(node).__name__} statement")
        for field, value in ast.iter_fields(node):
            for child in (value if isinstance(value, list) else [value]):
                if isinstance(child, ast.stmt):
                    self._statement(child)
                elif isinstance(child, ast.AST):
                    self._expression(child)

    def _expression(self, node):
        if not isinstance(node, _EXPRESSIONS):
            self._refuse(node, f"a {type(node).__name__} expression")
        if isinstance(node, ast.Name) and node.id not in self.names:
            self._refuse(node, f"the name {node.id!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool, str, type(None))):
            self._refuse(node, "a constant that is not a number, a string or None")
        if isinstance(node, ast.Attribute):
            self._expression(node.value)   # an unknown root is named before its attribute
            if node.attr.startswith("_"):
                self._refuse(node, f"the attribute {node.attr!r}")
            if not (self._triton_path(node) or node.attr in TENSOR_ATTRS):
                self._refuse(node, f"the attribute {node.attr!r}")
        for child in ast.iter_child_nodes(node):
            self._expression(child)

    def _triton_path(self, node) -> bool:
        """tl.x, tl.math.y, triton.cdiv: a chain of public names rooted at a triton alias, each
        link but the last one of MODULES, resolved against triton itself before anything runs."""
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not (isinstance(node, ast.Name) and node.id in self.aliases) or self.aliases[node.id] == "triton.jit":
            return False
        value = importlib.import_module(self.aliases[node.id])
        for attr in reversed(chain):
            if not (type(value).__name__ == "module" and value.__name__ in MODULES):
                return False
            value = getattr(value, attr, None)
            if value is None:
                return False
        return not (type(value).__name__ == "module" and value.__name__ not in MODULES)


def kernel_module(source: bytes, path: str, name: str, folder: str):
    """The module holding only the file's kernels (and triton's imports and its number
    constants), written to ``folder`` and imported, with ``name`` the one to launch.
    Raises NotAKernel with a message the learner can act on."""
    text = source.decode("utf-8", "replace")
    try:
        tree = ast.parse(text, filename=os.path.basename(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise NotAKernel(f"the file could not be read as Python ({type(e).__name__}: {e})") from None
    aliases = _module_aliases(tree)
    constants = _constant_names(tree)
    kernels = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)
               and any(_is_jit(d, aliases) for d in n.decorator_list)}
    if name not in kernels:
        raise NotAKernel(f"the file has no @triton.jit function named {name!r} at its top level "
                         "(keep the stub's kernel and its name)")
    for fn in kernels.values():
        if len(fn.decorator_list) != 1:
            raise NotAKernel(f"{os.path.basename(path)}, line {fn.lineno}: {fn.name} has decorators "
                             "besides @triton.jit; the judge launches plain @triton.jit kernels")
        _Checker(fn, aliases, set(constants) | set(kernels), path).check()
    lines = text.splitlines() or [""]
    kept = [""] * len(lines)
    for node in [*constants.values(), *kernels.values()]:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        for i in range(first - 1, node.end_lineno):
            kept[i] = lines[i]
    # triton's imports on the first line, in the file's own names (every line keeps its number)
    imports = [f"from triton import jit as {a}" if full == "triton.jit" else f"import {full} as {a}"
               for a, full in sorted(aliases.items())]
    kept[0] = "; ".join(imports + ([kept[0]] if kept[0].strip() else []))
    file = os.path.join(folder, f"judge_kernel_{name}.py")
    with open(file, "w", encoding="utf-8") as f:
        f.write("\n".join(kept) + "\n")
    spec = importlib.util.spec_from_file_location(f"judge_kernel_{name}", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def launch_with(launcher_source: str, launcher_name: str, kernel):
    """The problem's launcher (its source, from the spec) with ``kernel`` as its kernel."""
    namespace = {"__name__": "judge_launcher"}
    exec(compile(launcher_source, "<the judge's launcher>", "exec"), namespace)
    launcher = namespace[launcher_name]

    def launch(**args):
        return launcher(kernel, **args)
    return launch
