"""The browser runs the course on Pyodide 0.27.7's numpy 2.0.2 and matplotlib 3.8.4. This
checks, without a browser and in seconds, that the core, the judge, the model answers of
every problem that needs no GPU, and the code of every chapter that imports no torch/triton
run on exactly those versions -- so a call that only a newer numpy has is caught here.

It runs in .venv-pyodide-versions, made from web/requirements-pyodide-versions.txt by
web/test-setup.sh (which .ci/run calls). Without that venv the test skips, except in CI
(CI=true), where it fails."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "web"))
import landing  # noqa: E402
import pyodide_dist  # noqa: E402

VENV_PY = ROOT / ".venv-pyodide-versions" / "bin" / "python"

SCRIPT = r"""
import os, sys, time
sys.modules["torch"] = None      # the browser has neither
sys.modules["triton"] = None
os.environ["MPLBACKEND"] = "Agg"
import matplotlib, numpy
want = dict(a.split("=") for a in sys.argv[1].split(","))
got = {"numpy": numpy.__version__, "matplotlib": matplotlib.__version__}
assert got == want, f"this venv has {got}, the browser {want}"
sys.path.insert(0, os.getcwd())
import mlacourse
from grader import runner
from pathlib import Path
stubs = Path(os.environ["MLA_STUBS"])  # the committed stubs, not the learner's practice/
assert not mlacourse.__file__.startswith(sys.prefix), "the checkout's mlacourse, not an installed one"
done = []
for p in runner.discover():
    if p.needs_torch:
        continue
    for folder, want_status in ((runner.ROOT / "solutions", "passed"), (stubs, "not started")):
        r = runner.grade(p, folder / p.filename, seed=11, isolation="none")
        assert r.status == want_status, (p.number, folder, r.status, r.message,
                                         [o.message for o in r.outcomes if o.status != "pass"][:1])
    done.append(p.number)
print("problems", done)
import json
for nb_path in sys.argv[2:]:
    cells = json.load(open(nb_path))["cells"]
    ns = {"__name__": "__main__"}
    os.chdir(os.path.dirname(nb_path))
    t0 = time.perf_counter()
    for i, c in enumerate(cells):
        if c["cell_type"] != "code":
            continue
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        src = "\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!")))
        try:
            exec(compile(src, f"{os.path.basename(nb_path)}[cell {i}]", "exec"), ns)
        except Exception as e:
            raise SystemExit(f"{os.path.basename(nb_path)} cell {i}: {type(e).__name__}: {e}")
    import matplotlib.pyplot as plt
    plt.close("all")
    print("chapter", os.path.basename(nb_path), f"{time.perf_counter() - t0:.1f} s")
print("ok")
"""


def browser_chapters():
    return [p for p in landing.chapters() if not landing.gpu_imports(p)]


def test_versions_venv_pins_the_browser_versions():
    """The local mirror pins exactly what the site ships (one source: pyodide_dist)."""
    text = (ROOT / "web" / "requirements-pyodide-versions.txt").read_text()
    for name, version in pyodide_dist.BROWSER_VERSIONS.items():
        assert f"\n{name}=={version} \\" in text, f"{name}=={version} is not pinned in requirements-pyodide-versions.txt"


def test_course_runs_on_the_browser_numpy_and_matplotlib(stubs):
    if not VENV_PY.exists():
        msg = ".venv-pyodide-versions is missing: make it with `bash web/test-setup.sh --versions`"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " (CI must run this check)")
        pytest.skip(msg)
    chapters = browser_chapters()
    assert len(chapters) >= 5, chapters
    want = ",".join(f"{k}={v}" for k, v in pyodide_dist.BROWSER_VERSIONS.items())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MLA_STUBS=str(stubs))
    res = subprocess.run([str(VENV_PY), "-c", SCRIPT, want, *map(str, chapters)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    print(res.stdout)
    assert res.returncode == 0 and res.stdout.rstrip().endswith("ok"), res.stdout[-3000:] + res.stderr[-3000:]
    graded = [int(x) for x in res.stdout.split("problems [", 1)[1].split("]", 1)[0].split(",")]
    from grader import runner
    assert graded == [p.number for p in runner.discover() if not p.needs_torch], graded
