"""Imports point down (DESIGN: the shape of the house), read from the source, every import
counted (those inside functions too):

    web/ -> classroom/ -> grader/ -> mlacourse/        kernels/ -> mlacourse/

The judge a student runs (grader/) never imports the teacher's tools (classroom/), the
site (web/) or the chapters' translation (i18n/); no module of these packages imports,
through any chain, itself."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# what each package may import from the course; kernels/ and mlacourse/ are checked for
# cycles with the kernels refactor of issue 20 (mlacourse/engine/gpu.py imports kernels today)
MAY_IMPORT = {"grader": {"mlacourse"}, "classroom": {"grader", "mlacourse"}, "i18n": set(),
              "web": {"classroom", "grader", "mlacourse"}}
PACKAGES = ("mlacourse", "grader", "classroom", "kernels", "i18n", "web")


def modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for p in sorted((ROOT / top).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def imports(name: str, path: Path, known: dict) -> set[str]:
    """The course modules ``name`` imports (relative imports resolved; web/'s scripts import
    each other by bare name)."""
    found = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            if name.startswith("web.") and f"web.{t}" in known:
                t = f"web.{t}"
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


GRAPH = {m: imports(m, p, modules()) for m, p in modules().items()}


def test_packages_import_only_what_lies_below():
    wrong = sorted(f"{m} imports {t}" for m, ts in GRAPH.items() for t in ts
                   if m.split(".")[0] in MAY_IMPORT and t.split(".")[0] != m.split(".")[0]
                   and t.split(".")[0] not in MAY_IMPORT[m.split(".")[0]])
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_through_a_chain():
    checked = {m for m in GRAPH if m.split(".")[0] in MAY_IMPORT}
    # a package's __init__ naming its own submodules is not a cycle of the code
    graph = {m: {t for t in GRAPH[m] if t in checked and not t.startswith(m + ".")} for m in checked}
    cycles, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(checked):
        if m not in state:
            visit(m, [m])
    assert not cycles, "\n".join(cycles)


def test_the_graph_sees_imports_inside_functions():
    """The check is not blind: a lazy import counts (classroom/platforms.py imports the
    runner inside its functions)."""
    assert "grader.runner" in GRAPH["classroom.platforms"] and "classroom.execute" in GRAPH["web.build"]
