"""The site's landing pages, generated, one per language: site/index.html (English) and
site/zh/index.html (Chinese). The chapter map comes from the chapters (title = the first
heading of notebooks/NN_*.ipynb, or of notebooks/zh/NN_*.ipynb on the Chinese page; GPU
parts = the chapter imports torch/triton), the problem table from the problem specs
(grader.runner.discover()), and the page's own words from the code below through the
site's catalogue (i18n/zh_CN/site.po, msgid = the English written here; i18n/site.py).
Nothing here is a second hand-written copy of any of them: a new chapter or problem
appears by itself, in both languages.

The languages (EDITIONS) share one layout: an edition's pages sit in its folder of the
site ("" or "zh/"), its chapters in the same folder of notebooks/ and of book/, so that
the same page in the other language is found by swapping that folder (other_page)."""
from __future__ import annotations

import ast
import html
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from i18n import site as site_i18n  # noqa: E402

GPU_ONLY = {"torch", "triton"}


@dataclass(frozen=True)
class Edition:
    lang: str        # the pages' lang attribute (BCP 47): "en", "zh-CN"
    name: str        # the language's name in itself: what the switch to it says
    folder: str      # its folder under site/, notebooks/ and book/: "" or "zh/"
    lab_suffix: str  # added to a chapter's file name in the lab (lab_notebook)


EDITIONS = (Edition("en", "English", "", ""), Edition("zh-CN", "中文", "zh/", ".zh"))

# Chinese text's fonts: system fonts only, the same stack as the lecture decks' (i18n/fonts.py)
from i18n.fonts import ZH_FONTS  # noqa: E402


def edition(lang: str) -> Edition:
    for e in EDITIONS:
        if e.lang == lang:
            return e
    raise ValueError(f"no edition {lang!r}: the site has {[e.lang for e in EDITIONS]}")


def up(folder: str) -> str:
    """From a page in ``folder`` (site-relative, "" or "a/" or "a/b/") to the site's root."""
    return "../" * folder.count("/")


def other(lang: str) -> Edition:
    return next(e for e in EDITIONS if e.lang != lang)


def other_page(page: str, lang: str) -> str:
    """The same page in the other language, both site-relative:
    index.html <-> zh/index.html, book/01_x.html <-> book/zh/01_x.html."""
    here, there = edition(lang).folder, other(lang).folder
    head, _, name = page.rpartition("/")
    head = head + "/" if head else ""
    if here and head.endswith(here):
        head = head[: -len(here)]
    return f"{head}{there}{name}"


def switch_html(lang: str, href: str) -> str:
    """The language switch: this page's language, then a link to the same page in the other."""
    here, there = edition(lang), other(lang)
    return (f'<span class="lang-switch"><span lang="{here.lang}" aria-current="true">{_e(here.name)}</span> · '
            f'<a href="{_e(href)}" hreflang="{there.lang}" lang="{there.lang}">{_e(there.name)}</a></span>')


# --------------------------------------------------------------------------- chapters

def chapters() -> list[Path]:
    """The English chapters, in reading order."""
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def chapter_in(path: Path, lang: str) -> tuple[Path, str]:
    """(the chapter's notebook in ``lang``, the language it is in): the Chinese edition's
    notebooks/zh/NAME where it exists, else the English one (a chapter not translated yet)."""
    folder = edition(lang).folder
    translated = ROOT / "notebooks" / folder / path.name
    return (translated, lang) if folder and translated.is_file() else (path, "en")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


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


def problem_title(problem, lang: str) -> tuple[str, str]:
    """(the problem's title in ``lang``, the language it is in).

    The hook for the judge's Chinese catalogue: until the judge translates its problems'
    titles, every title is English, and a Chinese page marks it lang="en". When it does,
    look the title up here and return (translation, lang), falling back to the English."""
    return problem.title, "en"


def lab_notebook(name: str, lang: str) -> str:
    """Where chapter ``name`` (NN_slug.ipynb) of edition ``lang`` is in the lab's contents:
    notebooks/NN_slug.ipynb, notebooks/zh/NN_slug.zh.ipynb. Not the same file name in both:
    JupyterLite (0.6) gives a notebook the kernel session of any open notebook of the same
    file name, so the Chinese chapter opened beside the English one took over its kernel."""
    ed = edition(lang)
    return f"notebooks/{ed.folder}{name.removesuffix('.ipynb')}{ed.lab_suffix}.ipynb"


def lab_url(path_in_lab: str) -> str:
    """Site-relative: a file of the lab's contents opened in JupyterLite."""
    return f"lab/lab/index.html?path={path_in_lab}"


def _e(s) -> str:
    return html.escape(str(s))


def _in(text: str, text_lang: str, page_lang: str) -> str:
    """Escaped text, in a span with its language where it differs from the page's."""
    return _e(text) if text_lang == page_lang else f'<span lang="{text_lang}">{_e(text)}</span>'


# --------------------------------------------------------------------------- the page

def render_landing(book: bool = True, problems=None, runtime_mb: float = 0.0, lang: str = "en") -> str:
    """The landing page in ``lang`` ("en": site/index.html, "zh-CN": site/zh/index.html)."""
    if problems is None:
        from grader import runner
        problems = runner.discover()
    _ = site_i18n.translator(lang)
    ed = edition(lang)
    root = up(ed.folder)            # from this page to the site's root
    by_chapter: dict[str, list] = {}
    for p in problems:
        by_chapter.setdefault(Path(p.chapter).name, []).append(p)

    read, run = _("read"), _("run in the browser")   # (not inside f-strings: the extractor skips those)
    rows = []
    for en_path in chapters():
        path, chapter_lang = chapter_in(en_path, lang)
        folder = edition(chapter_lang).folder
        num = en_path.name[:2].lstrip("0")
        gpu = gpu_imports(path)
        note = ('<div class="note">' + _("Its {gpu} cells need a GPU machine; in the browser they are skipped "
                                          "and the rest runs.").format(gpu=" + ".join(sorted(gpu))) + "</div>"
                ) if gpu else ""
        links = []
        if book:
            links.append(f'<a href="{_e(root + "book/" + folder + path.stem)}.html">{_e(read)}</a>')
        links.append(f'<a href="{_e(root + lab_url(lab_notebook(path.name, chapter_lang)))}">{_e(run)}</a>')
        practice = ", ".join(str(p.number) for p in by_chapter.get(en_path.name, [])) or "–"
        rows.append(f"<tr><td>{_e(num)}</td><td>{_in(title(path), chapter_lang, lang)}{note}</td>"
                    f"<td>{' · '.join(links)}</td><td>{_e(practice)}</td></tr>")

    prows = []
    for p in problems:
        needs = " + ".join(m for m in p.requires if m != "numpy")
        command = f"<code>python practice/judge.py {p.number}</code>"
        where = (_("needs {gpu}: on a computer ({command})").format(gpu=needs, command=command)
                 if p.needs_torch else
                 _('<a href="{url}">edit</a>, then {command}').format(
                     url=_e(root + lab_url("practice/" + p.filename)), command=f"<code>%judge {p.number}</code>"))
        name, name_lang = problem_title(p, lang)
        prows.append(f"<tr><td>{p.number}</td><td><code>{_e(p.slug)}</code> — {_in(name, name_lang, lang)}</td>"
                     f'<td class="wide">{_e(Path(p.chapter).name[:2].lstrip("0"))}</td>'
                     f'<td class="wide"><code>practice/{_e(p.filename)}</code></td><td>{where}</td></tr>')

    judge = _e(root + lab_url("practice/judge.ipynb"))
    words = {  # every sentence of the page, through the catalogue; {placeholders} filled below
        "intro": _("The whole course runs in this browser: Python (Pyodide) with numpy and matplotlib, "
                   "served from this site — nothing to install, no account. The first start of Python "
                   "downloads at most {runtime_mb} MB once; after that it comes from the browser's cache."
                   ).format(runtime_mb=f"{runtime_mb:.0f}"),
        "open_lab": _("Open the lab"), "judge_button": _("The judge"),
        "book_note": "" if book else "<p>" + _("(This build has no rendered book.)") + "</p>",
        "chapters": _("Chapters"), "chapter": _("chapter"), "practice": _("practice"),
        "problems": _("Practice problems"),
        "problems_intro": _(
            "Each problem is a file in <code>practice/</code>. Write the function it asks for, save "
            "(Ctrl-S), and grade it in <a href=\"{judge}\">practice/judge.ipynb</a> with "
            "<code>%judge N</code> (<code>%judge N --hint</code> for a hint, <code>%judge</code> for all). "
            "The verdicts and feedback are those of <code>python practice/judge.py N</code> on a computer. "
            "In the browser your code runs inside the notebook's kernel, <b>in-process with no time limit</b>: "
            "if grading never finishes (an endless loop), use <i>Kernel › Restart Kernel</i>, fix the file "
            "and grade again.").format(judge=judge),
        "problem": _("problem"), "file": _("file"), "in_browser": _("in the browser"),
        "packages": _("Packages"),
        "packages_text": _(
            "The site serves Python, numpy, matplotlib and the course, and nothing else. "
            "<code>%pip install NAME</code> in a notebook only finds those (anything else: \"PyPI fallback "
            "is disabled\"). A <code>micropip.install(\"NAME\")</code> in your own code is different: it asks "
            "the public Python Package Index (pypi.org) for the package over the internet, so it works only "
            "online and only for pure-Python packages. The course never needs it."),
        "storage": _("Where your work lives"),
        "storage_text": _(
            "Your edits to chapters and practice files are saved in <b>this browser's storage for this "
            "site</b> (IndexedDB): they survive reloads and restarts, but not clearing the site's data, "
            "a private window, or another browser or computer. Nothing is uploaded. To keep a copy, "
            "right-click a file in the lab's file browser and choose <i>Download</i> (or "
            "<i>File › Download</i> with the file open)."),
        "local": _("On your own computer"),
        "local_text": _(
            "Everything here also runs locally, with a real time limit per graded case, and problem 12 and "
            "the GPU parts of chapter 6 need it: <code>bash setup.sh &amp;&amp; python practice/judge.py</code> "
            "(see the repository's README)."),
    }
    there = other(lang)
    other_href = root + other_page(f"{ed.folder}index.html", lang)
    return PAGE.format(
        lang=ed.lang, course=_e(_(site_i18n.course_title(ROOT / "README.md"))), root=root,
        font=ZH_FONTS, other_lang=there.lang, other_href=_e(other_href), switch=switch_html(lang, other_href),
        chapter_rows="\n".join(rows), problem_rows="\n".join(prows), judge=judge,
        lab=_e(root + "lab/lab/index.html"), **words)


# The structure of both pages; every word in it comes from `words` above (the catalogue).
PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="{root}favicon.ico">
<link rel="alternate" hreflang="{other_lang}" href="{other_href}">
<title>{course}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; color: #1f2328; }}
/* Chinese (the whole page, or a span in an English one): a Simplified Chinese system font, none downloaded */
html[lang="zh-CN"] body, body [lang="zh-CN"] {{ font-family: {font}; }}
html[lang="zh-CN"] body {{ line-height: 1.6; }}
html[lang="zh-CN"] body [lang="en"] {{ font-family: system-ui, sans-serif; }}
table {{ border-collapse: collapse; width: 100%; margin: 0.5rem 0 1.5rem; }}
th, td {{ border-bottom: 1px solid #d0d7de; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }}
th {{ background: #f6f8fa; }}
code {{ background: #f6f8fa; padding: 0 0.2rem; border-radius: 3px; overflow-wrap: anywhere; }}
/* a phone (390 px): the problem table drops its chapter and file columns (the edit link opens the file) */
@media (max-width: 40rem) {{ .wide {{ display: none; }} th, td {{ padding: 0.3rem 0.25rem; }} }}
.note {{ color: #57606a; font-size: 0.9em; }}
.start a {{ display: inline-block; margin: 0 0.6rem 0.4rem 0; padding: 0.4rem 0.8rem; border: 1px solid #0969da; border-radius: 6px; text-decoration: none; }}
.lang-switch {{ float: right; font-size: 0.95em; }}
</style>
</head>
<body>
<nav>{switch}</nav>
<h1>{course}</h1>
<p>{intro}</p>
<p class="start"><a href="{lab}">{open_lab}</a><a href="{judge}">{judge_button}</a></p>
{book_note}
<h2>{chapters}</h2>
<table>
<tr><th>#</th><th>{chapter}</th><th></th><th>{practice}</th></tr>
{chapter_rows}
</table>

<h2>{problems}</h2>
<p>{problems_intro}</p>
<table>
<tr><th>#</th><th>{problem}</th><th class="wide">{chapter}</th><th class="wide">{file}</th><th>{in_browser}</th></tr>
{problem_rows}
</table>

<h2>{packages}</h2>
<p>{packages_text}</p>

<h2>{storage}</h2>
<p>{storage_text}</p>

<h2>{local}</h2>
<p>{local_text}</p>
</body>
</html>
"""
