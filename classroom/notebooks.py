"""Notebook hand-ins: a problem's functions taken out of a student's .ipynb, statically, and
written as a practice file that the judge then grades like any other file.

    SUBMISSIONS/alice/week4.ipynb  --(problem 4)-->  a generated p04_choose_path.py

Nothing from a notebook runs here. The .ipynb is read as JSON, each code cell is parsed
(``ast``) and the names each top-level statement reads and binds come from ``symtable``
(the compiler's own scoping rules: comprehensions, closures, ``global``). The generated
file is graded by the judge in its sandbox, as a handed-in .py would be.

Which notebooks, for which problem (submissions.notebook_matches, with this module's
``own_definitions``):
  * by name, with the rules practice files use (``p04.ipynb``, ``choose_path.ipynb``,
    ``alice_p04_choose_path.ipynb``, ...; submissions.RULES);
  * by content: the notebook defines, at top level, one of the functions the problem asks
    for, with a body of its own (not the course chapter's own code, not a bare stub).
A practice file (.py) for the problem always wins over a notebook, except an unchanged
stub, which a notebook replaces (the stub is not graded, and matching.md says so).

What is taken (``extract``): the problem's functions, each from the last top-level
statement of the notebook that binds it (cell order, as "Run All" would leave them), and,
recursively, every name they use: a top-level ``import`` (only the names needed), ``def``,
``class`` or plain assignment (``X = ...``, ``X: int = ...``, ``X += ...``). Statements
keep their order; each is preceded by ``# cell N, line L`` (cell N = the Nth cell of the
notebook counting every cell from the top), and the judge's messages are mapped back to
those cells (``relabel``). IPython's line magics and shell lines (``%time``, ``!pip``)
are left out; cells whose magic makes them something other than Python (``%%bash``,
``%%writefile``) are ignored.

Refused, loudly (``Extraction.refused`` is the reason, which goes into every report),
when the functions cannot be rebuilt from what the notebook shows:
  * the notebook is not a readable nbformat-4 notebook, or holds too much code;
  * no top-level statement defines a function the problem asks for;
  * a cell that (re)defines a needed name does not parse;
  * a needed name is bound by something other than the statements above (a ``for``
    loop, an ``if`` or ``try`` block, ``del``, a ``global`` write inside a function, an
    IPython magic such as ``x = !ls``), comes from ``from m import *`` or ``%run``, or
    is bound nowhere (state from a deleted cell), or is read before any cell binds it;
  * a needed value is changed after it is set by a top-level statement the extraction
    does not copy (``X[0] = 1``, ``X.append(1)``, ``np.add(a, b, out=X)``).
What it cannot see and does not claim to: a value changed inside a function the notebook
calls at top level (``init(cache)``), or cells run out of order and then edited.
"""
from __future__ import annotations

import ast
import bisect
import builtins
import dataclasses
import functools
import hashlib
import json
import os
import re
import symtable
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from grader.reasons import Reason

from . import shown
from .fingerprint import fingerprint, is_trivial

ROOT = Path(__file__).resolve().parent.parent
MAX_NOTEBOOK_BYTES = 16 << 20   # outputs (plots) make notebooks large; code is capped below
MAX_CODE_CHARS = 1 << 20        # the code cells together
MAX_STATEMENTS = 20_000         # top-level statements of all code cells together
MAX_REASON = 1000               # characters of a refusal's reason (it quotes the student's code)
ANALYSIS_CPU_S = 30             # CPU seconds to analyse one notebook for every problem (a child)
ANALYSIS_MEMORY = 1 << 30       # bytes that child may allocate beyond what it starts with
MAX_ANALYSIS_BYTES = 64 << 20   # the child's answer (the generated files: 1 MiB of code each at most)
REASON = Reason.NOTEBOOK_UNUSABLE  # the reason a refused notebook's verdict carries
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun"}   # %%magic whose body is Python
IPYTHON_ONLY = {"display", "get_ipython", "In", "Out", "_", "__", "___", "_i", "_ii", "_iii",
                "_oh", "_ih", "_dh"}
MODULE_NAMES = {"__name__", "__doc__", "__file__", "__spec__", "__loader__", "__package__",
                "__builtins__", "__annotations__"}
MAGIC_VALUE = "__ipython_magic__"   # what `x = !ls` becomes, so that a need of x is refused
MUTATORS = {"append", "extend", "insert", "remove", "pop", "popitem", "clear", "update", "setdefault",
            "add", "discard", "sort", "reverse", "fill", "resize", "put", "itemset", "setflags",
            "partition", "difference_update", "intersection_update", "symmetric_difference_update",
            "appendleft", "extendleft", "rotate", "move_to_end", "__setitem__", "__delitem__"}
COPIED = ("import", "def", "class", "assign")   # the statement kinds an extraction copies
LABELS = {ast.For: "a `for` loop", ast.AsyncFor: "a `for` loop", ast.While: "a `while` loop",
          ast.If: "an `if` block", ast.With: "a `with` block", ast.AsyncWith: "a `with` block",
          ast.Try: "a `try` block", ast.Delete: "a `del` statement", ast.Expr: "an expression",
          ast.AnnAssign: "an annotation without a value"}
if hasattr(ast, "Match"):
    LABELS[ast.Match] = "a `match` block"
if hasattr(ast, "TryStar"):
    LABELS[ast.TryStar] = "a `try` block"


# --------------------------------------------------------------------------- reading a notebook

@dataclass
class Statement:
    """One top-level statement of a code cell."""
    index: int               # position in the notebook: cell order, then statement order
    cell: int                # 1-based, counting every cell (markdown too) from the top
    line: int                # first line inside the cell, 1-based
    text: str                # its exact source
    kind: str                # import, def, class, assign, or what else it is ("a `for` loop")
    node: ast.stmt = field(repr=False)
    binds: frozenset = frozenset()      # module-level names it binds
    needs_now: frozenset = frozenset()  # names read when the statement runs
    needs_later: frozenset = frozenset()  # names its functions read when called
    global_writes: frozenset = frozenset()  # names its functions assign through `global`
    mutations: dict = field(default_factory=dict, repr=False)  # name -> first node changing its value


@dataclass
class Notebook:
    rel: str
    error: str = ""                                 # why it cannot be read at all
    statements: list = field(default_factory=list)  # [Statement] in notebook order
    bound: dict = field(default_factory=dict)       # name -> [Statement] binding it, in order
    broken: list = field(default_factory=list)      # (cell, text, message): cells that do not parse
    foreign: list = field(default_factory=list)     # (cell, "%%bash"): cells that are not Python
    runs: list = field(default_factory=list)        # (cell, "%run x.py"): magics that define names unseen
    counts: dict = field(default_factory=dict)      # cell -> execution_count (when saved)
    mutated: dict = field(default_factory=dict)     # name -> [indices of statements changing its value]

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]

    def definitions(self, name: str) -> list[Statement]:
        return self.bound.get(name, [])

    def last_before(self, name: str, point: int):
        """The last statement binding ``name`` before statement ``point``, or None."""
        defs = self.bound.get(name, [])
        k = bisect.bisect_left(defs, point, key=lambda st: st.index)
        return defs[k - 1] if k else None

    def first_change(self, name: str, after: int, before: int):
        """(statement, node) of the first change to ``name``'s value in a statement strictly
        between ``after`` and ``before``, or None (an index: linear in nothing)."""
        changes = self.mutated.get(name, [])
        k = bisect.bisect_right(changes, after)
        if k < len(changes) and changes[k] < before:
            st = self.statements[changes[k]]
            return st, st.mutations[name]
        return None


def _cell_source(cell) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    return src if isinstance(src, str) else ""


_NAMES = re.compile(r"[A-Za-z_][\w\s,]*")   # `a, b` before `= !cmd` (greedy: no backtracking)
_HELP = re.compile(r"[\w.]+\?{1,2}")


def _magic_assignment(stripped: str):
    """(targets, command) of ``x = !ls`` or ``a, b = %time f()``, else None -- in one pass
    (a regular expression with a lazy part took minutes on a long line of spaces)."""
    m = _NAMES.match(stripped)
    if m is None:
        return None
    rest = stripped[m.end():]
    if not rest.startswith("=") or rest.startswith("=="):
        return None
    command = rest[1:].lstrip()
    if not command.startswith(("!", "%")):
        return None
    return m.group(0).rstrip(), command


def python_source(src: str) -> tuple[str | None, str, list[str]]:
    """(the cell as Python with IPython syntax neutralized line for line, the cell magic
    that makes it something else or "", the %run/%load lines). Line numbers are kept
    (line breaks \\r\\n and \\r count as \\n, as Python counts them)."""
    lines = src.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].strip()[2:].split()[0] if lines[first].strip()[2:].split() else ""
        if magic not in PYTHON_CELL_MAGICS:
            return None, f"%%{magic}", []
        lines[first] = ""
    runs, out = [], []
    for ln in lines:
        stripped = ln.lstrip()
        indent = ln[:len(ln) - len(stripped)]
        assigned = _magic_assignment(stripped)
        if assigned:
            ln = f"{indent}{assigned[0]} = {MAGIC_VALUE}({assigned[1]!r})"
        elif stripped.startswith(("%", "!")) or _HELP.fullmatch(stripped):
            if re.match(r"^%(run|load|load_ext|store|autoreload|aimport)\b", stripped):
                runs.append(stripped)
            ln = f"{indent}pass  # IPython: {stripped}"
        out.append(ln)
    return "\n".join(out), "", runs


def _scopes(text: str):
    """(binds, needs_now, needs_later, global_writes) of one top-level statement, from
    symtable; None when the compiler rejects it on its own (``return`` at top level)."""
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    syms = table.get_symbols()
    binds = {s.get_name() for s in syms if s.is_assigned() or s.is_imported()}
    now = {s.get_name() for s in syms if s.is_referenced()}
    later, writes = set(), set()

    def walk(t, immediate: bool):
        for child in t.get_children():
            kind, name = str(child.get_type()).lower(), child.get_name()
            comprehension = name in ("listcomp", "setcomp", "dictcomp", "genexpr")
            runs_now = immediate and ("class" in kind or comprehension)
            for s in child.get_symbols():
                if s.is_global() and s.is_referenced():
                    (now if runs_now else later).add(s.get_name())
                if s.is_declared_global() and s.is_assigned():
                    writes.add(s.get_name())
            walk(child, runs_now)

    try:
        walk(table, True)
    except RecursionError:   # scopes nested thousands deep: never copied
        return None
    return frozenset(binds), frozenset(now), frozenset(later), frozenset(writes)


def _kind(node: ast.stmt) -> str:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "def"
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, (ast.Assign, ast.AugAssign)) or (isinstance(node, ast.AnnAssign) and node.value):
        return "assign"
    return LABELS.get(type(node), f"a `{type(node).__name__}` statement")


def _statement_text(src_lines: list[str], node: ast.stmt, shares_line: bool, encoded: list) -> str:
    """The statement's source: its lines, or where it shares a line with another (`a = 1;
    b = 2`), the columns it spans (``encoded``: the lines as UTF-8, which the columns
    count; ast.get_source_segment split the whole cell again for every statement)."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    if not shares_line:
        return "\n".join(src_lines[start - 1:node.end_lineno])
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return encoded[first][node.col_offset:node.end_col_offset].decode("utf-8", "replace")
    return "\n".join([encoded[first][node.col_offset:].decode("utf-8", "replace"), *src_lines[first + 1:last],
                      encoded[last][:node.end_col_offset].decode("utf-8", "replace")])


_PARSED: dict = {}     # sha256 of a notebook -> its Notebook (a class hands in many equal copies)
MAX_MEMORY_ERRORS = 2  # cells the parser may refuse with MemoryError before the read stops


def read_notebook(rel: str, data: bytes) -> Notebook:
    """Parse every code cell of the .ipynb in ``data`` (never running anything)."""
    key = hashlib.sha256(data).hexdigest()
    if key not in _PARSED:
        if len(_PARSED) >= 16:   # a parsed notebook can be large: keep a few
            _PARSED.clear()
        with warnings.catch_warnings():   # a student's "\d" (SyntaxWarning) is not the teacher's concern
            warnings.simplefilter("ignore")
            _PARSED[key] = _parse(data)
    return dataclasses.replace(_PARSED[key], rel=rel)


def _parse(data: bytes) -> Notebook:
    nb = Notebook("")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        nb.error = f"it is not a notebook file that can be read (not valid JSON: {str(e)[:120]})"
        return nb
    if not isinstance(doc, dict):
        nb.error = "it is not a notebook file (no cells)"
        return nb
    if "worksheets" in doc and "cells" not in doc:
        nb.error = ("it is an old-format notebook (nbformat 3): open it in Jupyter and save it, "
                    "which writes the current format")
        return nb
    cells = doc.get("cells")
    if not isinstance(cells, list):
        nb.error = "it is not a notebook file (no list of cells)"
        return nb
    total = 0
    memory_errors = 0
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = _cell_source(cell)
        total += len(raw)
        if total > MAX_CODE_CHARS:
            nb.error = f"its code cells hold more than {MAX_CODE_CHARS:,} characters"
            return nb
        if isinstance(cell.get("execution_count"), int):
            nb.counts[number] = cell["execution_count"]
        source, magic, runs = python_source(raw)
        nb.runs += [(number, r) for r in runs]
        if source is None:
            nb.foreign.append((number, magic))
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            # CPython's parser says MemoryError for a stack overflow (`-` a hundred thousand
            # times): one such cell is broken, the rest is read. A read that has run out of
            # memory says it on every cell that follows; going on would spend the CPU limit
            # failing cell after cell, so the third one ends the read (analyse_bounded:
            # "needs more than N MB").
            memory_errors += isinstance(e, MemoryError)
            if memory_errors > MAX_MEMORY_ERRORS:
                raise
            where = f"line {e.lineno}: " if isinstance(e, SyntaxError) and e.lineno else ""
            msg = e.msg if isinstance(e, SyntaxError) else f"too deeply nested to read ({type(e).__name__})"
            nb.broken.append((number, raw, f"{where}{msg}"))
            continue
        lines = source.split("\n")
        body = tree.body
        encoded = None
        for k, node in enumerate(body):
            # statements come in order: one shares a line only with a neighbour
            shares = (k > 0 and body[k - 1].end_lineno >= node.lineno) or \
                (k + 1 < len(body) and body[k + 1].lineno <= node.end_lineno)
            if shares and encoded is None:
                encoded = [ln.encode("utf-8", "surrogatepass") for ln in lines]
            text = _statement_text(lines, node, shares, encoded)
            scopes = _scopes(text)
            kind = _kind(node)
            if scopes is None:   # the compiler rejects it alone: never copied
                binds = frozenset(_ast_binds(node))
                scopes = (binds, frozenset(), frozenset(), frozenset())
                kind = kind if kind not in COPIED else "a statement Python rejects outside a cell"
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                scopes = (scopes[0], scopes[1] | {node.target.id}, *scopes[2:])   # X += 1 reads X
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            if len(nb.statements) >= MAX_STATEMENTS:
                nb.error = f"its code cells hold more than {MAX_STATEMENTS:,} top-level statements"
                return nb
            st = Statement(len(nb.statements), number, first, text, kind, node, *scopes)
            st.mutations = _mutations(st.node)
            nb.statements.append(st)
            for name in st.binds:
                nb.bound.setdefault(name, []).append(st)
            for name in st.mutations:
                nb.mutated.setdefault(name, []).append(st.index)
    return nb


def _ast_binds(node: ast.stmt) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
    return out


# --------------------------------------------------------------------------- extraction

@dataclass
class Extraction:
    """What a notebook gives for one problem: a practice file, or the reason it cannot."""
    notebook: str                    # the notebook's path inside the submission
    problem: int
    source: str = ""                 # the generated practice file ("" when refused)
    refused: str = ""                # why the notebook cannot be graded for this problem
    cells: list = field(default_factory=list)      # cells the file was taken from
    line_map: dict = field(default_factory=dict)   # generated line -> (cell, line in cell)
    notes: list = field(default_factory=list)      # what a teacher should know

    @property
    def data(self) -> bytes:
        return self.source.encode("utf-8")


class _Refused(Exception):
    pass


def _where(st: Statement) -> str:
    return f"cell {st.cell}, line {st.line}"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 70 else line[:67] + "..."


def _base_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _unparse(node, st: Statement) -> str:
    try:
        return ast.unparse(node)
    except RecursionError:
        return _first_line(st.text)


def _mutations(top: ast.stmt) -> dict:
    """{name: the first node that changes name's value (not a rebinding)} inside a top-level
    statement, outside the functions it defines: one walk per statement, so that the
    extraction asks an index, never walks the notebook again per name."""
    found: dict = {}
    todo = [top]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if node is not top:
                continue
            todo.extend(node.decorator_list + node.args.defaults
                        + [d for d in node.args.kw_defaults if d is not None])
            continue
        names = []
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.append(_base_name(node.value))
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in MUTATORS:
                names.append(_base_name(f.value))
            names += [_base_name(kw.value) for kw in node.keywords if kw.arg == "out"]
        for name in names:
            if name is not None and name not in found:
                found[name] = node
        todo.extend(ast.iter_child_nodes(node))
    return found


def _unbound_reason(nb: Notebook, name: str, user: str, point: int) -> str:
    """Why ``name`` (read by ``user``) has no binding the extraction can use."""
    head = f"`{user}` uses `{name}`" if user != name else f"`{name}`"
    later = [s for s in nb.definitions(name) if s.index >= point]
    if later:
        return (f"{head} before any cell defines it (it is first defined in {_where(later[0])}): "
                "the cells only work when run out of order")
    if name == MAGIC_VALUE:
        st = next((s for s in nb.statements if user in s.binds and MAGIC_VALUE in s.text), None)
        shown = f" ({_where(st)}: `{_first_line(st.text.split(' = ' + MAGIC_VALUE)[0])} = ...`)" if st else ""
        return f"`{user}` is the output of an IPython command{shown} (`x = !...` or `x = %...`), which is not Python"
    if name in IPYTHON_ONLY:
        return f"{head}, which exists only inside Jupyter (IPython), not in a Python file"
    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    broken = [c for c, raw, _ in nb.broken if word.search(raw)]
    if broken:
        c, _, msg = next(b for b in nb.broken if b[0] == broken[0])
        return f"{head}, which cell {c} may define, but cell {c} does not parse ({msg})"
    writers = [s for s in nb.statements if name in s.global_writes]
    if writers:
        return (f"{head}, which is set only inside a function through `global {name}` "
                f"({_where(writers[0])}); its value depends on calls the extraction does not run")
    stars = [s for s in nb.statements if isinstance(s.node, ast.ImportFrom)
             and any(a.name == "*" for a in s.node.names)]
    if stars:
        return (f"{head}, which may come from `{_first_line(stars[0].text)}` ({_where(stars[0])}); "
                f"import the names you use explicitly (`from {stars[0].node.module} import {name}`)")
    if nb.runs:
        c, r = nb.runs[0]
        return f"{head}, which no cell defines; it may come from `{r}` (cell {c}), which the extraction does not follow"
    if nb.foreign:
        c, m = nb.foreign[0]
        extra = f" (cell {c} is a {m} cell, not Python)"
    else:
        extra = ""
    return (f"{head}, which no cell of the notebook defines at top level{extra}: it may come "
            "from a cell that was deleted or changed after it ran")


def extract(nb: Notebook, problem) -> Extraction:
    """The practice file for ``problem`` rebuilt from the notebook, or the reason it
    cannot be (Extraction.refused)."""
    ex = Extraction(nb.rel, problem.number)
    try:
        if nb.error:
            raise _Refused(nb.error)
        _check_functions(nb, problem, ex)
        chosen, aliases = _slice(nb, problem)
        _render(nb, problem, chosen, aliases, ex)
    except _Refused as why:
        ex.refused, ex.source, ex.line_map = shown.cut(str(why), MAX_REASON), "", {}
    return ex


def _check_functions(nb: Notebook, problem, ex: Extraction) -> None:
    defined = [f for f in problem.functions if nb.definitions(f)]
    missing = [f for f in problem.functions if f not in defined]
    if missing:
        asks = ", ".join(f"`{f}`" for f in problem.functions)
        nested = [f for f in missing if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                            and n.name == f for s in nb.statements for n in ast.walk(s.node))]
        broken = [c for c, raw, _ in nb.broken if any(_defines(f).search(raw) for f in missing)]
        why = (f"no cell defines {', '.join(f'`{f}`' for f in missing)} at top level "
               f"(problem {problem.number} asks for {asks})")
        if broken:
            c, _, msg = next(b for b in nb.broken if b[0] == broken[0])
            why += f"; cell {c} has a definition but does not parse ({msg})"
        elif nested:
            why += "; it is defined only inside another block or function"
        raise _Refused(why)
    for f in problem.functions:
        defs = nb.definitions(f)
        last = defs[-1]
        redefined = [(c, msg) for c, raw, msg in nb.broken if c > last.cell and _defines(f).search(raw)]
        if redefined:
            c, msg = redefined[0]
            raise _Refused(f"cell {c} redefines `{f}` but does not parse ({msg}); fix or delete it")
        if len(defs) > 1:
            cells = sorted({d.cell for d in defs})
            note = (f"`{f}` is defined {len(defs)} times (cells {', '.join(map(str, cells))}); "
                    f"the last, in cell {last.cell}, was graded")
            ran = {d.cell: nb.counts.get(d.cell) for d in defs}
            if ran.get(last.cell) is not None and any(v is not None and v > ran[last.cell] for v in ran.values()):
                first_ran = max((c for c in ran if ran[c] is not None), key=lambda c: ran[c])
                note += f" (though cell {first_ran} ran after it when the notebook was saved)"
            ex.notes.append(note)


def _slice(nb: Notebook, problem) -> tuple[dict, dict]:
    """{index: Statement} the functions need, and {index: names} for import statements
    (only the names needed are imported)."""
    end = len(nb.statements)
    todo = deque((f, end, f) for f in problem.functions)
    seen, chosen, aliases = set(), {}, {}
    builtin_names = set(dir(builtins)) | MODULE_NAMES
    while todo:
        name, point, user = todo.popleft()
        if (name, point) in seen:
            continue
        seen.add((name, point))
        st = nb.last_before(name, point)
        if st is None:
            if name in builtin_names and name not in IPYTHON_ONLY:
                continue
            raise _Refused(_unbound_reason(nb, name, user, point))
        if st.kind not in COPIED:
            raise _Refused(f"`{name}` (used by `{user}`) is set by {st.kind} ({_where(st)}: "
                           f"`{_first_line(st.text)}`); the grader copies only imports, functions, "
                           "classes and plain assignments from a notebook")
        if st.kind != "import":
            change = nb.first_change(name, st.index, point)
            if change:
                later, node = change
                raise _Refused(f"`{name}` (used by `{user}`) is set in {_where(st)} and then changed "
                               f"in {_where(later)} by `{_first_line(_unparse(node, later))}`; the grader "
                               "copies definitions, not later changes, so it cannot rebuild that value")
        if st.kind == "import":
            aliases.setdefault(st.index, set()).add(name)
        if st.index in chosen:
            continue
        chosen[st.index] = st
        todo.extend((n, st.index, name) for n in sorted(st.needs_now))
        todo.extend((n, end, name) for n in sorted(st.needs_later))
    return chosen, aliases


def _import_text(st: Statement, names: set) -> str:
    """The import statement reduced to the names needed."""
    node = st.node
    keep = [a for a in node.names if (a.asname or a.name.split(".")[0]) in names]
    if len(keep) == len(node.names):
        return st.text
    new = ast.Import(names=keep) if isinstance(node, ast.Import) else \
        ast.ImportFrom(module=node.module, names=keep, level=node.level)
    return ast.unparse(new)


def _render(nb: Notebook, problem, chosen: dict, aliases: dict, ex: Extraction) -> None:
    fns = ", ".join(problem.functions)
    head = [f"# Generated by `python -m classroom grade` from the notebook {nb.name}",
            f"# for problem {problem.number} ({problem.slug}): the top-level definitions it asks for",
            f"# ({fns}) and the imports, functions, classes and assignments they use,",
            "# copied from the notebook's code cells in their order (cell N = the Nth cell from",
            "# the top). Nothing else of the notebook is here, and none of it was run to make this file."]
    out = list(head)
    cells = {c.cell for c in chosen.values()}
    future = sorted({s.index for s in nb.statements if isinstance(s.node, ast.ImportFrom)
                     and s.node.module == "__future__" and s.cell in cells})
    for i in future:
        chosen.setdefault(i, nb.statements[i])
    order = sorted(chosen, key=lambda i: (i not in future, i))
    for i in order:
        st = chosen[i]
        text = _import_text(st, aliases[i]) if i in aliases else st.text
        out += ["", f"# cell {st.cell}, line {st.line}"]
        first = len(out) + 1
        body = text.split("\n")
        for k in range(len(body)):
            ex.line_map[first + k] = (st.cell, st.line + k)
        out += body
    ex.source = "\n".join(out) + "\n"
    ex.cells = sorted({st.cell for st in chosen.values()})
    ex.notes.insert(0, f"taken from cell{'s' if len(ex.cells) > 1 else ''} "
                       f"{', '.join(map(str, ex.cells))} of the notebook")


# --------------------------------------------------------------------------- which notebooks

@functools.lru_cache(maxsize=1)
def course_functions() -> tuple[frozenset, dict]:
    """(the course's chapter file names, {function name: fingerprints of the chapters' own
    definitions}): a chapter a student hands back unchanged is not their attempt."""
    names, prints = set(), {}
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        names.add(path.name)
        try:
            nb = read_notebook(path.name, path.read_bytes())
        except OSError:
            continue
        for st in nb.statements:
            if st.kind == "def":
                prints.setdefault(st.node.name, set()).add(fingerprint(st.node))
    return frozenset(names), prints


def own_definitions(nb: Notebook, problem) -> list[str]:
    """The problem's functions this notebook defines at top level with a body of its own."""
    _, course = course_functions()
    out = []
    for f in problem.functions:
        defs = [s for s in nb.definitions(f) if s.kind == "def"]
        try:
            own = bool(defs) and not is_trivial(defs[-1].node) \
                and fingerprint(defs[-1].node) not in course.get(f, set())
        except RecursionError:   # too deep to compare: it is not the course's code either
            own = True
        if own:
            out.append(f)
    return out


@functools.lru_cache(maxsize=256)
def _defines(function: str) -> re.Pattern:
    """A line that starts a definition of ``function`` (spaces and tabs only before it,
    so a run of blank lines is not scanned again from each of its starts)."""
    return re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(function)}(?!\w)", re.M)


def unparsed_definitions(nb: Notebook, problem) -> list[str]:
    """The problem's functions a cell that does not parse seems to define (``def f(``)."""
    return [f for f in problem.functions if any(_defines(f).search(raw) for _, raw, _ in nb.broken)]


def relabel(rec, ex: Extraction, filename: str):
    """The judge's record with 'p04_choose_path.py, line 14' turned into the notebook's
    'week4.ipynb cell 5, line 3' (the line a student can find)."""
    name = ex.notebook.rsplit("/", 1)[-1]
    pattern = re.compile(rf'(?:"[^"\n]*{re.escape(filename)}"|"\{{FILE\}}"|\b{re.escape(filename)}), line (\d+)')

    def sub(m):
        where = ex.line_map.get(int(m.group(1)))
        return f"{name} cell {where[0]}, line {where[1]}" if where else m.group(0)

    def walk(obj):
        if isinstance(obj, str):
            return pattern.sub(sub, obj)
        if isinstance(obj, dict):
            return {k: walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        return obj

    return walk(rec)


def stage(match, problem, folder: Path) -> Path:
    """Write the practice file rebuilt from a notebook as folder/<sha>/pNN_slug.py."""
    path = Path(folder) / match.sha256[:24] / problem.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(match.data)
    return path


def is_refused(match) -> bool:
    ex = getattr(match, "notebook", None)
    return ex is not None and bool(ex.refused)




# --------------------------------------------------------------------------- bounded analysis

@dataclass
class Analysis:
    """What one notebook gives the matching (submissions.notebook_matches)."""
    rel: str
    error: str = ""                                   # unreadable, over a limit, or too slow to read
    defines: dict = field(default_factory=dict)       # problem number -> defines its functions itself
    extractions: dict = field(default_factory=dict)   # problem number -> Extraction


def analyse(rel: str, data: bytes, problems, wanted=()) -> Analysis:
    """Read the notebook and extract every problem it defines functions of or that is
    ``wanted`` (its name fits them), in this process. Linear in the notebook's size: one
    parse, one symtable and one walk per statement, indexes for the rest."""
    book = read_notebook(rel, data)
    out = Analysis(rel, book.error)
    for p in problems:
        out.defines[p.number] = bool(not book.error and (own_definitions(book, p) or unparsed_definitions(book, p)))
        if p.number in wanted or out.defines[p.number]:
            out.extractions[p.number] = extract(book, p)
    return out


_ANALYSED: dict = {}   # (sha256 of the notebook, its name, problems, wanted) -> Analysis


def analyse_bounded(rel: str, data: bytes, problems, wanted=(), cpu_s: float = ANALYSIS_CPU_S,
                    memory: int = ANALYSIS_MEMORY) -> Analysis:
    """``analyse`` in a child process (a fork) that may use ``cpu_s`` seconds of CPU and
    ``memory`` more bytes, so that no notebook can hold the teacher's process: one over a
    limit is refused (``Analysis.error`` says which limit). Where there is no fork
    (Windows), in this process. Equal notebooks in a class are analysed once."""
    key = (hashlib.sha256(data).hexdigest(), rel, tuple(p.number for p in problems), tuple(sorted(wanted)))
    if key in _ANALYSED:
        return _ANALYSED[key]
    if not hasattr(os, "fork"):
        try:
            result = analyse(rel, data, problems, wanted)
        except (MemoryError, RecursionError) as e:
            result = Analysis(rel, error=f"the notebook is over the grader's limits for reading one: "
                                         f"{_TOO_MUCH[type(e)]}; hand in the .py file, or a smaller notebook")
    else:
        course_functions()   # the chapters are read once, here, not in every child
        result = _in_child(rel, data, problems, wanted, cpu_s, memory)
    # kept for a class's equal copies; a large answer (generated files) is not kept, so the
    # cache holds at most 64 small ones
    if sum(len(ex.source) for ex in result.extractions.values()) <= 256 << 10:
        if len(_ANALYSED) >= 64:
            _ANALYSED.clear()
        _ANALYSED[key] = result
    return result


def _limit_self(cpu_s: float, memory: int) -> None:
    """In the child: CPU seconds (SIGXCPU, then SIGKILL one second later) and private
    memory (RLIMIT_DATA above what the fork already holds; MemoryError beyond it -- the
    parent's free heap, which the child reuses first, comes on top of it)."""
    import resource
    cpu = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    try:
        with open("/proc/self/status") as f:
            held = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmData:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return   # no /proc (macOS): the CPU limit still holds
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = held + memory
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))


def _plain(a: Analysis) -> dict:
    return {"rel": a.rel, "error": a.error, "defines": {str(k): v for k, v in a.defines.items()},
            "extractions": {str(k): {**dataclasses.asdict(ex), "line_map": [[k2, *v] for k2, v in ex.line_map.items()]}
                            for k, ex in a.extractions.items()}}


def _from_plain(d: dict) -> Analysis:
    out = Analysis(d["rel"], d["error"], {int(k): bool(v) for k, v in d["defines"].items()})
    for k, ex in d["extractions"].items():
        line_map = {int(g): (int(c), int(ln)) for g, c, ln in ex.pop("line_map")}
        out.extractions[int(k)] = Extraction(**ex, line_map=line_map)
    return out


_TOO_MUCH = {MemoryError: "it needs more memory to read than the grader gives it",
             RecursionError: "its code is nested too deeply to read"}


def _in_child(rel, data, problems, wanted, cpu_s, memory) -> Analysis:
    import select
    import signal
    import time
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: analyse, answer in JSON on the pipe, never return
        code = 0
        try:
            os.close(r)
            # the answers to a read that ran out of memory or stack, made before the limit
            # (composing one then could fail too), and a reserve freed before answering
            out_of_memory = json.dumps({"error": f"it needs more than {memory >> 20:,} MB to read"}).encode()
            too_deep = json.dumps({"error": _TOO_MUCH[RecursionError]}).encode()
            reserve = bytearray(1 << 20)
            _limit_self(cpu_s, memory)
            try:
                payload = json.dumps(_plain(analyse(rel, data, problems, wanted))).encode("utf-8", "backslashreplace")
            # one class per clause: `except (A, B)` builds a tuple, which fails with no memory left
            except MemoryError:
                reserve, payload = None, out_of_memory
            except SystemError:   # CPython's parser says SystemError where malloc fails
                reserve, payload = None, out_of_memory
            except RecursionError:
                reserve, payload = None, too_deep
            except Exception as e:  # noqa: BLE001 -- a bug here refuses the notebook, it never crashes grading
                answer = {"error": f"the grader failed to read it ({type(e).__name__}); hand in the .py file"}
                payload = json.dumps(answer).encode("utf-8", "backslashreplace")
            del reserve
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view):]
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks, size, why = [], 0, ""
    deadline = time.monotonic() + 3 * cpu_s + 10   # wall clock: a child that sleeps, or a busy machine
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                why = f"reading it took longer than {3 * cpu_s + 10:.0f} s"
                break
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_ANALYSIS_BYTES:
                why = f"what it gives is larger than {MAX_ANALYSIS_BYTES >> 20} MB"
                break
            chunks.append(chunk)
    finally:
        os.close(r)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    if not why and os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        if not chunks:
            why = f"reading it took more than {cpu_s:.0f} s of CPU"
    if not why:
        try:
            answer = json.loads(b"".join(chunks).decode("utf-8"))
            if set(answer) == {"error"}:
                return Analysis(rel, error=str(answer["error"]))
            return _from_plain(answer)
        except (ValueError, KeyError, TypeError):
            why = "the grader could not read it (its reading process stopped without an answer)"
    return Analysis(rel, error=f"the notebook is over the grader's limits for reading one: {why}; "
                               "hand in the .py file, or a smaller notebook")


# --------------------------------------------------------------------------- for the reports

def class_notebooks(students) -> tuple[list, list]:
    """([(student, problem, notebook)] graded from a notebook, [(student, problem, notebook,
    why)] refused), over grade.Graded students or submissions.Submission objects."""
    graded, refused = [], []
    for g in students:
        sub = getattr(g, "sub", g)
        for n, m in sorted(sub.matches.items()):
            ex = m.notebook
            if ex is None:
                continue
            where = f"{sub.source}{m.rel}"
            if ex.refused:
                refused.append((sub.student, n, where, ex.refused))
            else:
                graded.append((sub.student, n, where))
    return graded, refused


def student_note(sub) -> str:
    """The gradebook's `notebooks` cell for one student."""
    parts = []
    for n, m in sorted(sub.matches.items()):
        if m.notebook is not None:
            parts.append(f"p{n:02d} NOT GRADED: {m.rel} could not be used ({m.notebook.refused})"
                         if m.notebook.refused else f"p{n:02d} graded from {m.rel}")
    return "; ".join(parts)


__all__ = ["read_notebook", "extract", "analyse", "analyse_bounded", "Analysis", "own_definitions", "unparsed_definitions", "course_functions", "relabel",
           "is_refused",
           "class_notebooks", "student_note", "python_source", "stage", "Extraction", "Notebook", "REASON",
           "MAX_NOTEBOOK_BYTES"]
