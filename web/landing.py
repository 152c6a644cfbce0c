"""The site's landing page, generated: the chapter map from notebooks/NN_*.ipynb (title =
the first heading, GPU parts = the chapter imports torch/triton) and the problem table
from the problem specs (grader.runner.discover()). Nothing here is a second hand-written
copy of either: a new chapter or problem appears by itself."""
from __future__ import annotations

import ast
import html
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPU_ONLY = {"torch", "triton"}


def chapters() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def title(path: Path) -> str:
    """The chapter's first Markdown heading, without the '#'s (or the file name)."""
    for cell in _cells(path):
        if cell["cell_type"] == "markdown":
            for line in _source(cell).splitlines():
                m = re.match(r"\s*#+\s+(.*\S)", line)
                if m:
                    return m.group(1)
    return path.stem


def gpu_imports(path: Path) -> set[str]:
    """torch/triton among the modules the chapter's code imports."""
    names = set()
    for cell in _cells(path):
        if cell["cell_type"] != "code":
            continue
        code = "\n".join(l for l in _source(cell).splitlines() if not l.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names & GPU_ONLY


def lab_url(path_in_lab: str) -> str:
    return f"lab/lab/index.html?path={path_in_lab}"


def _e(s) -> str:
    return html.escape(str(s))


def render_landing(book: bool = True, problems=None, runtime_mb: float = 0.0) -> str:
    if problems is None:
        from grader import runner
        problems = runner.discover()
    by_chapter: dict[str, list] = {}
    for p in problems:
        by_chapter.setdefault(Path(p.chapter).name, []).append(p)

    rows = []
    for path in chapters():
        num = path.name[:2].lstrip("0")
        gpu = gpu_imports(path)
        note = (f'<div class="note">Its {" + ".join(sorted(gpu))} cells need a GPU machine; in the browser '
                "they are skipped and the rest runs.</div>") if gpu else ""
        links = []
        if book:
            links.append(f'<a href="book/{_e(path.stem)}.html">read</a>')
        links.append(f'<a href="{_e(lab_url("notebooks/" + path.name))}">run in the browser</a>')
        practice = ", ".join(str(p.number) for p in by_chapter.get(path.name, [])) or "–"
        rows.append(f"<tr><td>{_e(num)}</td><td>{_e(title(path))}{note}</td>"
                    f"<td>{' · '.join(links)}</td><td>{_e(practice)}</td></tr>")

    prows = []
    for p in problems:
        needs = " + ".join(m for m in p.requires if m != "numpy")
        where = (f"needs {needs}: on a computer (<code>python practice/judge.py {p.number}</code>)"
                 if p.needs_torch else f'<a href="{_e(lab_url("practice/" + p.filename))}">edit</a>, then '
                             f"<code>%judge {p.number}</code>")
        prows.append(f"<tr><td>{p.number}</td><td><code>{_e(p.slug)}</code> — {_e(p.title)}</td>"
                     f'<td class="wide">{_e(Path(p.chapter).name[:2].lstrip("0"))}</td>'
                     f'<td class="wide"><code>practice/{_e(p.filename)}</code></td><td>{where}</td></tr>')

    readme = (ROOT / "README.md").read_text()
    m = re.search(r"^#\s+(.*\S)", readme, re.M)
    course = m.group(1) if m else "The MLA course"
    return PAGE.format(course=_e(course), chapter_rows="\n".join(rows), problem_rows="\n".join(prows),
                       judge=_e(lab_url("practice/judge.ipynb")), runtime_mb=f"{runtime_mb:.0f}", lab=_e("lab/lab/index.html"),
                       book_note="" if book else "<p>(This build has no rendered book.)</p>")


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="favicon.ico">
<title>{course}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; color: #1f2328; }}
table {{ border-collapse: collapse; width: 100%; margin: 0.5rem 0 1.5rem; }}
th, td {{ border-bottom: 1px solid #d0d7de; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }}
th {{ background: #f6f8fa; }}
code {{ background: #f6f8fa; padding: 0 0.2rem; border-radius: 3px; overflow-wrap: anywhere; }}
/* a phone (390 px): the problem table drops its chapter and file columns (the edit link opens the file) */
@media (max-width: 40rem) {{ .wide {{ display: none; }} th, td {{ padding: 0.3rem 0.25rem; }} }}
.note {{ color: #57606a; font-size: 0.9em; }}
.start a {{ display: inline-block; margin: 0 0.6rem 0.4rem 0; padding: 0.4rem 0.8rem; border: 1px solid #0969da; border-radius: 6px; text-decoration: none; }}
</style>
</head>
<body>
<h1>{course}</h1>
<p>The whole course runs in this browser: Python (Pyodide) with numpy and matplotlib,
served from this site — nothing to install, no account. The first start of Python downloads
at most {runtime_mb} MB once; after that it comes from the browser's cache.</p>
<p class="start"><a href="{lab}">Open the lab</a><a href="{judge}">The judge</a></p>
{book_note}
<h2>Chapters</h2>
<table>
<tr><th>#</th><th>chapter</th><th></th><th>practice</th></tr>
{chapter_rows}
</table>

<h2>Practice problems</h2>
<p>Each problem is a file in <code>practice/</code>. Write the function it asks for, save
(Ctrl-S), and grade it in <a href="{judge}">practice/judge.ipynb</a> with
<code>%judge N</code> (<code>%judge N --hint</code> for a hint, <code>%judge</code> for all).
The verdicts and feedback are those of <code>python practice/judge.py N</code> on a computer.
In the browser your code runs inside the notebook's kernel, <b>in-process with no time limit</b>:
if grading never finishes (an endless loop), use <i>Kernel › Restart Kernel</i>, fix the file and grade again.</p>
<table>
<tr><th>#</th><th>problem</th><th class="wide">chapter</th><th class="wide">file</th><th>in the browser</th></tr>
{problem_rows}
</table>

<h2>Packages</h2>
<p>The site serves Python, numpy, matplotlib and the course, and nothing else. <code>%pip install
NAME</code> in a notebook only finds those (anything else: "PyPI fallback is disabled"). A
<code>micropip.install("NAME")</code> in your own code is different: it asks the public
Python Package Index (pypi.org) for the package over the internet, so it works only online
and only for pure-Python packages. The course never needs it.</p>

<h2>Where your work lives</h2>
<p>Your edits to chapters and practice files are saved in <b>this browser's storage for this
site</b> (IndexedDB): they survive reloads and restarts, but not clearing the site's data,
a private window, or another browser or computer. Nothing is uploaded. To keep a copy,
right-click a file in the lab's file browser and choose <i>Download</i> (or
<i>File › Download</i> with the file open).</p>

<h2>On your own computer</h2>
<p>Everything here also runs locally, with a real time limit per graded case, and
problem 12 and the GPU parts of chapter 6 need it: <code>bash setup.sh &amp;&amp;
python practice/judge.py</code> (see the repository's README).</p>
</body>
</html>
"""
