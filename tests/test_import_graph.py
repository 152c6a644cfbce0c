"""The import graph of the course's packages (DESIGN.md: "Imports point down"):

    web/ -> classroom/ -> grader/ -> mlacourse/        kernels/ -> mlacourse/
    web/ and classroom/ -> i18n/ (the Chinese edition: catalogues, fonts)
    authoring/ -> classroom/, i18n/, grader/ (what is generated from the specs)
    i18n/ -> grader/ (the judge's catalogue is extracted from the problems' specs)

The judge a student runs (grader/) never imports the teacher's tools (classroom/), the site
(web/), the chapters' translation (i18n/) or the Triton kernels (kernels/: problem 12's
kernel is the learner's, launched by grader/child/kernel.py); kernels/ imports only
mlacourse/ (its CPU references and plans are the math core's); mlacourse/ imports no other
package; no module imports itself through a chain, inside kernels/ included. Every package
is listed in MAY_IMPORT: a new one must say what it may import.

The packages are found, not listed: every top-level folder of the repository with an
__init__.py (tests/ aside: tests may import anything), and web/, whose scripts import each
other by bare name. Every import counts, at module level or
inside a function (a lazy import is still a dependency, and a cycle through one only works
because of the order things happen to load in), and so does importlib.import_module("a.b")
with a literal name. Read with ast: nothing is imported or run."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOTTOM = "mlacourse"  # the math core: imports no other package of the course
SCRIPTS = ("web",)     # folders of scripts without __init__.py whose imports count too
# What a package may import from the rest of the course (every package must be listed).
MAY_IMPORT = {"mlacourse": set(), "grader": {"mlacourse"}, "kernels": {"mlacourse"},
              "classroom": {"grader", "mlacourse", "i18n"},
              "i18n": {"grader", "mlacourse"},   # the judge's catalogue is extracted from grader/'s specs
              "web": {"classroom", "grader", "i18n", "mlacourse"},
              "authoring": {"classroom", "grader", "i18n"}}   # the authors' tools: what is generated


def packages(root: Path = ROOT) -> list[str]:
    found = {p.name for p in root.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"}
    return sorted(found | {s for s in SCRIPTS if (root / s).is_dir()})


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of every package (a package is its
    __init__) -- but a problem's learner code: its folder's stub template, bases and corpus
    attempts are not modules of the course (grader.problems.shipped)."""
    from grader.problems import shipped
    found = {}
    for pkg in packages(root):
        for f in sorted((root / pkg).rglob("*.py")):
            if not shipped(f.relative_to(root).as_posix()):
                continue
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = f
    return found


def _imported_names(module: str, path: Path, mods) -> set[str]:
    """The course's modules one module imports: `import a.b` (a.b), `from a import b` (a.b when
    that is a module, else a), relative imports resolved, importlib.import_module("a.b")."""
    def resolve(name: str):  # the deepest module of the course a dotted name reaches
        top = module.split(".")[0]
        if top in SCRIPTS and f"{top}.{name}" in mods:
            name = f"{top}.{name}"   # web/build.py's `from landing import ...`
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            source = node.module
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{source}.{a.name}" if f"{source}.{a.name}" in mods else resolve(source or "") for a in node.names}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
            found.add(resolve(str(node.args[0].value)))
    return {m for m in found if m and m != module}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the course's modules it imports."""
    mods = modules(root)
    return {module: _imported_names(module, path, mods) for module, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return sorted(found)


def forbidden_imports(graph, may_import=MAY_IMPORT) -> list[str]:
    """Imports from one package into another that ``may_import`` does not allow."""
    return sorted(f"{m} imports {t}" for m, ts in graph.items() for t in ts
                  if m.split(".")[0] in may_import and t.split(".")[0] != m.split(".")[0]
                  and t.split(".")[0] not in may_import[m.split(".")[0]])


def upward_imports(graph, bottom: str = BOTTOM) -> list[str]:
    """Imports from the bottom package into another package of the course."""
    return sorted(f"{m} -> {t}" for m, ts in graph.items() if m.split(".")[0] == bottom
                  for t in ts if t.split(".")[0] != bottom)


# ---- the repository ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_packages_are_found(graph):
    found = packages()
    assert {"mlacourse", "kernels", "grader"} <= set(found), found
    assert "kernels.mla_decode" in graph and "mlacourse.engine.core" in graph
    assert "mlacourse.schedule" in graph["kernels.plan"], "an edge the graph must have"


def test_mlacourse_imports_no_other_package_of_the_course(graph):
    assert not upward_imports(graph), ("mlacourse/ is the bottom layer (plain numpy, it runs in the browser): "
                                       f"it may not import {upward_imports(graph)}")


def test_mlacourse_and_kernels_have_no_import_cycle(graph):
    mine = [c for c in cycles(graph) if any(m.split(".")[0] in ("mlacourse", "kernels") for m in c)]
    assert not mine, f"import cycles: {mine}"


def test_no_import_cycle(graph):
    found = cycles(graph)
    assert not found, f"import cycles: {found} (a module that both need belongs in a third module)"


def test_packages_import_only_what_lies_below(graph):
    wrong = forbidden_imports(graph)
    assert not wrong, "\n".join(wrong)


def test_every_package_says_what_it_may_import():
    assert set(packages()) == set(MAY_IMPORT), ("a package of the course with no rule (or a rule for "
                                                f"none): {sorted(set(packages()) ^ set(MAY_IMPORT))}")


def test_kernels_use_the_math_core_and_nothing_uses_kernels(graph):
    """kernels/ -> mlacourse/ only; no package of the course imports kernels/ (the chapters
    and the tests do)."""
    kernels = {t.split(".")[0] for m, ts in graph.items() if m.split(".")[0] == "kernels" for t in ts}
    assert kernels == {"kernels", "mlacourse"}, kernels   # it does use the math core: an edge the test sees
    users = sorted(m for m, ts in graph.items() if m.split(".")[0] != "kernels"
                   and any(t.split(".")[0] == "kernels" for t in ts))
    assert not users, f"packages that import kernels/: {users}"


def test_the_graph_sees_lazy_imports_and_the_sites_scripts(graph):
    """classroom/platforms.py imports the runner inside its functions; web/build.py imports
    classroom's execute inside a function and landing by bare name."""
    assert "grader.runner" in graph["classroom.platforms"]
    assert {"classroom.execute", "web.landing"} <= graph["web.build"]


# ---- the checks can fail ---------------------------------------------------------------------

def _tree(tmp_path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return tmp_path


def test_a_lazy_cycle_and_an_upward_import_are_found(tmp_path):
    root = _tree(tmp_path, {
        "mlacourse/__init__.py": "from . import core\n",
        "mlacourse/core.py": "def f():\n    from kernels import adapter\n",  # lazy, and upward
        "kernels/__init__.py": "",
        "kernels/adapter.py": "from mlacourse.core import f\n",
        "kernels/a.py": "from .b import g\n",
        "kernels/b.py": "import importlib\ndef g():\n    importlib.import_module('kernels.a')\n",
        "kernels/c.py": "from . import a, b\n",  # two edges, no cycle
        "tests/__init__.py": "", "tests/t.py": "import kernels.a\nimport mlacourse\n",  # tests are not counted
    })
    g = import_graph(root)
    assert g["kernels.c"] == {"kernels.a", "kernels.b"} and "tests.t" not in g
    assert cycles(g) == [["kernels.a", "kernels.b"], ["kernels.adapter", "mlacourse.core"]]
    assert upward_imports(g) == ["mlacourse.core -> kernels.adapter"]
    assert forbidden_imports(g) == ["mlacourse.core imports kernels.adapter"]
    assert g["mlacourse"] == {"mlacourse.core"}, "a package importing its own module is no cycle by itself"


def test_relative_imports_resolve_to_the_right_module(tmp_path):
    root = _tree(tmp_path, {
        "pkg/__init__.py": "", "pkg/sub/__init__.py": "from .. import top\n",
        "pkg/top.py": "", "pkg/sub/leaf.py": "from ..top import x\nfrom . import other\nfrom .other import y\n",
        "pkg/sub/other.py": "",
    })
    g = import_graph(root)
    assert g["pkg.sub"] == {"pkg.top"} and g["pkg.sub.leaf"] == {"pkg.top", "pkg.sub.other"}


def test_a_kernel_importing_the_judge_and_the_judge_importing_a_kernel_are_found(tmp_path):
    root = _tree(tmp_path, {
        "mlacourse/__init__.py": "", "mlacourse/schedule.py": "",
        "kernels/__init__.py": "", "kernels/plan.py": "from mlacourse import schedule\n",   # allowed
        "kernels/bench.py": "def f():\n    from grader import runner\n",                      # up and across
        "grader/__init__.py": "", "grader/runner.py": "import kernels.plan\n",                 # the judge on a kernel
    })
    g = import_graph(root)
    assert forbidden_imports(g) == ["grader.runner imports kernels.plan", "kernels.bench imports grader.runner"]
    assert not cycles(g)
