"""The browser version, in a real browser: builds the site (web/build.sh), serves it on
127.0.0.1, and drives Debian's chromium with Playwright.

- every chapter, English (notebooks/) and Chinese (notebooks/zh/, in the lab
  notebooks/zh/NN_slug.zh.ipynb), opens in JupyterLite with its Pyodide kernel, unmodified
  (closing it untouched does not ask to save), and starts with the note on Interrupt vs
  Restart in its language, whose switch opens the same chapter in the other language in the
  lab, beside it, each with its own kernel;
- every chapter's code runs cell by cell in the browser, with no error output and nothing
  on stderr (matplotlib's font list is prebuilt): odd chapters in English, even ones in
  Chinese, so both folders of the lab run code; the edition not run holds, in the lab, the
  very code cells of the one that ran (the translation changes prose, never code), so
  running it again would only repeat the same run;
- in the browser, one practice file is written wrong and another right (in the editor,
  saved to the browser's storage), graded with %judge, and the feedback matches the local
  judge's for the same files and seed, line for line (minus the lines that must differ:
  the command's name, the file's folder, timings, the in-process note);
- the edits survive a page reload; `%judge N --hint` twice, with a reload between, gives
  hints 1 and 2 (overwriting the hint file once hung the kernel); each verdict says
  in-process once;
- no request leaves 127.0.0.1 (every other request is aborted and listed; canaries from
  the page and from the kernel prove that such requests are seen);
- the landing pages (index.html, zh/index.html) and every book page (book/, book/zh/) have
  no broken link or anchor, and math renders; each page has its lang and each book page is
  titled with its chapter's title; the language switch goes to the same page in the other
  language and back, on a landing page and a book page; the landing pages' problem table
  fits a 390 px phone with its "edit" links on screen; no request of the site answers 404;
- a screenshot of a chapter with a plot is saved (.site-test/chapter-with-plot.png), and
  the build time, first kernel start and each chapter's time are printed.

Needs /usr/bin/chromium and playwright (`bash web/test-setup.sh`); without them it skips,
except in CI (CI=true), where it fails. MLA_SITE_DIR=site reuses a folder built beforehand
instead of building one.
"""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "web"))
import build  # noqa: E402
import landing  # noqa: E402
import serve  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / ".site-test"
CHAPTERS = [p.name for p in landing.chapters()]
# the Chinese edition, as the lab holds it (notebooks/zh/): the same code, so the same run
ZH_CHAPTERS = [f"zh/{name}" for name in CHAPTERS if (ROOT / "notebooks" / "zh" / name).is_file()]


def runs_its_code(chapter: str) -> bool:
    """Whether this test runs the chapter's code in this edition: odd chapters in English,
    even ones in Chinese (where there is no Chinese edition, in English)."""
    name = Path(chapter).name
    in_chinese = int(name[:2]) % 2 == 0 and f"zh/{name}" in ZH_CHAPTERS
    return chapter.startswith("zh/") == in_chinese
SEED = 5
CELL_TIMEOUT_MS = 900_000  # one cell; chapter 4's CPU timing sweep is the slowest
# stderr a chapter may print in the browser: none (matplotlib's font cache is prebuilt)
ALLOWED_STDERR: set[str] = set()
CANARIES = ("https://canary.invalid/from-the-page.js", "https://canary.invalid/from-the-kernel/")
TIMES: dict[str, float] = {}
STATE: dict = {"outside": [], "page_errors": [], "http_errors": []}

pytestmark = pytest.mark.slow


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return "no /usr/bin/chromium"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed in this venv"
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory, request):
    why = _missing()
    if why:
        msg = f"browser test: {why}; enable it with `bash web/test-setup.sh` (Debian chromium + playwright)"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " -- CI must run it")
        pytest.skip(msg)
    if os.environ.get("MLA_SITE_DIR"):  # a folder built beforehand (quicker reruns while developing)
        out = Path(os.environ["MLA_SITE_DIR"]).resolve()
        assert (out / "index.html").is_file() and (out / "lab").is_dir(), f"MLA_SITE_DIR={out} is not a built site"
        return out
    out = tmp_path_factory.mktemp("built") / "site"
    # the chapters this session already executed (tests/test_notebooks.py, tests/test_i18n.py)
    # go to the book as they are, instead of a second run of each (web/build.py executed_before)
    from tests import test_notebooks
    executed = tmp_path_factory.mktemp("executed")
    for key, nb in test_notebooks.executed_chapters().items():
        (executed / key).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, executed / key)
    t0 = time.perf_counter()
    res = subprocess.run(["bash", str(ROOT / "web" / "build.sh"), "--out", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=1800,
                         env={**os.environ, "MLA_BOOK_EXECUTED": str(executed)})
    TIMES["build"] = time.perf_counter() - t0
    assert res.returncode == 0, f"web/build.sh failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    TIMES["size_mb"] = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
    return out


@pytest.fixture(scope="module")
def server(site):
    srv, url = serve.start(site)
    yield url
    srv.shutdown()


@pytest.fixture(scope="module")
def browser(server, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    def route(r):
        url = r.request.url
        if url.startswith(server) or url.startswith(("data:", "blob:")):
            return r.continue_()
        STATE["outside"].append(url)
        return r.abort()

    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM),
            headless=True, args=FLAGS, viewport={"width": 1280, "height": 900})
        ctx.route("**/*", route)
        ctx.on("weberror", lambda e: STATE["page_errors"].append(str(e.error)))
        ctx.on("response", lambda r: r.status >= 400 and r.url.startswith(server)
               and STATE["http_errors"].append(f"{r.status} {r.url}"))
        ctx.on("console", lambda m: m.type == "error" and "the server responded with a status" in m.text
               and STATE["http_errors"].append(f"console: {m.text} ({m.location.get('url', '')})"))
        yield ctx
        ctx.close()


@pytest.fixture(scope="module")
def lab(browser, server):
    page = browser.new_page()
    page.goto(server + "lab/lab/index.html")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.serviceManager", timeout=180_000)
    page.evaluate("() => window.jupyterapp.started")
    page.evaluate(f"() => fetch({CANARIES[0]!r}).catch(() => null)")  # must be seen and aborted
    return page


@pytest.fixture(scope="module", autouse=True)
def report_times(request):
    yield
    if not TIMES:
        return
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["browser site: times (this machine)"]
    if "build" in TIMES:
        lines.append(f"  build (web/build.sh, with book/)        {TIMES['build']:7.1f} s, site {TIMES.get('size_mb', 0):.1f} MB")
    if "first_kernel" in TIMES:
        lines.append(f"  first kernel start (cold browser cache)  {TIMES['first_kernel']:7.1f} s")
    for name in CHAPTERS + ZH_CHAPTERS:
        if f"nb:{name}" in TIMES:
            lines.append(f"  {name:40s} {TIMES[f'nb:{name}']:7.1f} s (kernel start {TIMES[f'kernel:{name}']:.1f} s)")
    if "grading" in TIMES:
        lines.append(f"  grading in the browser (judge notebook)  {TIMES['grading']:7.1f} s")
    if "all_problems" in TIMES:
        lines.append(f"  every model answer graded in the browser  {TIMES['all_problems']:7.1f} s")
    if "restart" in TIMES:
        lines.append(f"  kernel restart (stops an endless loop)   {TIMES['restart']:7.1f} s")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if tr is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # shown even when output is captured
            tr.write_line("")
            for line in lines:
                tr.write_line(line)
    (ARTIFACTS / "times.json").parent.mkdir(exist_ok=True)
    (ARTIFACTS / "times.json").write_text(json.dumps(TIMES, indent=1) + "\n")


# --------------------------------------------------------------------------- JupyterLab driving

OPEN = """async (path) => {
  const app = window.jupyterapp;
  const t0 = performance.now();
  const w = await app.commands.execute('docmanager:open', {path});
  await w.context.ready;
  if (w.sessionContext) {
    await w.sessionContext.ready;
    const k = w.sessionContext.session.kernel;
    while (k.status !== 'idle') {
      if (performance.now() - t0 > 300000) throw new Error('kernel not idle after 300 s: ' + k.status);
      await new Promise(r => setTimeout(r, 100));
    }
  }
  app.shell.activateById(w.id);
  return performance.now() - t0;
}"""

RUN_ALL = """async ([path, cellTimeout]) => {
  const app = window.jupyterapp;
  const w = app.shell.currentWidget;
  if (w.context.path !== path) throw new Error('the current widget is ' + w.context.path);
  const nb = w.content, cells = [];
  for (let i = 0; i < nb.widgets.length; i++) {
    const cell = nb.widgets[i];
    if (cell.model.type !== 'code') continue;
    nb.activeCellIndex = i;
    const t = performance.now();
    const ran = app.commands.execute('notebook:run-cell');
    const late = new Promise(r => setTimeout(() => r('timeout'), cellTimeout));
    const how = await Promise.race([ran.then(() => 'done'), late]);
    cells.push({i, how, ms: performance.now() - t, count: cell.model.executionCount,
                outputs: cell.model.outputs.toJSON()});
    if (how === 'timeout') break;
  }
  return cells;
}"""

CLOSE = """async () => {
  const app = window.jupyterapp;
  const w = app.shell.currentWidget;
  await w.context.save();
  const session = w.sessionContext && w.sessionContext.session;
  const id = session && session.id;
  w.dispose();
  if (id) await app.serviceManager.sessions.shutdown(id);
}"""

OPENED = """async () => {
  // the current notebook, a moment after its kernel is idle: modified? its first cell?
  await new Promise(r => setTimeout(r, 1500));
  const w = window.jupyterapp.shell.currentWidget;
  const first = w.content.model.cells.get(0);
  return {dirty: w.context.model.dirty, first: first ? first.sharedModel.getSource() : ''};
}"""

EXECUTE_WITHIN = """async ([code, ms]) => {
  // like EXECUTE, but gives up after ms (a hung kernel must fail the test, not stall it)
  const w = window.jupyterapp.shell.currentWidget;
  const kernel = w.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  const parts = [];
  future.onIOPub = (msg) => {
    const c = msg.content;
    if (msg.header.msg_type === 'stream') parts.push(c.text);
    else if (msg.header.msg_type === 'error') parts.push('ERROR ' + c.ename + ': ' + c.evalue);
    else if (c.data) parts.push(c.data['text/plain'] || '');
  };
  const how = await Promise.race([future.done.then(() => 'done'),
                                  new Promise(r => setTimeout(() => r('timeout'), ms))]);
  return {how, text: parts.join('')};
}"""

EXECUTE = """async (code) => {
  // run code in the current notebook's kernel and return what it printed
  const w = window.jupyterapp.shell.currentWidget;
  const kernel = w.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  const parts = [];
  future.onIOPub = msg => {
    const t = msg.header.msg_type, c = msg.content;
    if (t === 'stream') parts.push(c.text);
    else if (t === 'error') parts.push('ERROR ' + c.ename + ': ' + c.evalue);
    else if (t === 'execute_result' || t === 'display_data') parts.push((c.data || {})['text/plain'] || '');
  };
  const reply = await future.done;
  return {status: reply.content.status, text: parts.join('')};
}"""

WRITE_IN_EDITOR = """async ([path, text]) => {
  // open the file in JupyterLab's editor, replace its text, save (to the browser's storage)
  const app = window.jupyterapp;
  const w = await app.commands.execute('docmanager:open', {path, factory: 'Editor'});
  await w.context.ready;
  w.content.model.sharedModel.setSource(text);
  await w.context.save();
  w.dispose();
}"""

READ = """async (path) => (await window.jupyterapp.serviceManager.contents.get(path, {content: true})).content"""


def code_cells(page, path: str) -> list[str]:
    """The sources of a notebook's code cells, as the lab's storage holds them."""
    cells = page.evaluate(READ, path)["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == "code"]


def close(page) -> None:
    """Save and close the current notebook and shut its kernel down. JupyterLite 0.6 then
    reports 'Session <id> not found' as a page error (its session shutdown runs twice); that
    one error, raised by this teardown, is dropped -- any other page error fails the run."""
    n = len(STATE["page_errors"])
    page.evaluate(CLOSE)
    page.wait_for_timeout(1500)
    STATE["page_errors"][n:] = [e for e in STATE["page_errors"][n:]
                                if not re.fullmatch(r"Session [0-9a-f-]+ not found", e)]


def _bad_outputs(cells) -> list[str]:
    bad = []
    for c in cells:
        if c["how"] != "done":
            bad.append(f"cell {c['i']}: no answer after {CELL_TIMEOUT_MS / 1000:.0f} s")
        if c["count"] is None:
            bad.append(f"cell {c['i']}: did not run (no execution count)")
        for o in c["outputs"]:
            if o["output_type"] == "error":
                bad.append(f"cell {c['i']}: {o.get('ename')}: {o.get('evalue')}")
            elif o["output_type"] == "stream" and o.get("name") == "stderr":
                text = "".join(o.get("text", ""))
                extra = [l for l in text.splitlines() if l.strip() and l.strip() not in ALLOWED_STDERR]
                if extra:
                    bad.append(f"cell {c['i']} wrote to stderr: {' | '.join(extra)[:500]}")
    return bad


# --------------------------------------------------------------------------- chapters

@pytest.mark.parametrize("chapter", CHAPTERS + ZH_CHAPTERS)
def test_chapter_runs_in_the_browser(lab, chapter):
    lang = "zh-CN" if chapter.startswith("zh/") else "en"
    path = landing.lab_notebook(Path(chapter).name, lang)   # notebooks/zh/NN_slug.zh.ipynb in Chinese
    t0 = time.perf_counter()
    kernel_ms = lab.evaluate(OPEN, path)
    TIMES.setdefault("first_kernel", kernel_ms / 1000)
    TIMES[f"kernel:{chapter}"] = kernel_ms / 1000
    opened = lab.evaluate(OPENED)
    if not runs_its_code(chapter):   # the other edition runs this code (runs_its_code)
        twin = landing.lab_notebook(Path(chapter).name, "en" if lang == "zh-CN" else "zh-CN")
        mine, ran = code_cells(lab, path), code_cells(lab, twin)
        close(lab)
        assert not opened["dirty"], f"{chapter} shows as modified right after opening (closing it would ask to save)"
        assert opened["first"] == build.browser_note(lang, Path(chapter).name), opened["first"]
        differ = [i for i in range(max(len(mine), len(ran))) if mine[i:i + 1] != ran[i:i + 1]]
        assert mine and not differ, (f"{path} and {twin} hold different code in the lab (code cells {differ[:5]}), "
                                     f"so {twin}'s run does not stand for this one")
        return
    cells = lab.evaluate(RUN_ALL, [path, CELL_TIMEOUT_MS])
    TIMES[f"nb:{chapter}"] = time.perf_counter() - t0
    slow = sorted(cells, key=lambda c: -c["ms"])[:3]
    print(f"{chapter}: {len(cells)} code cells, slowest " +
          ", ".join(f"cell {c['i']} {c['ms'] / 1000:.1f} s" for c in slow))
    plots = [c for c in cells if any("image/png" in o.get("data", {}) for o in c["outputs"])]
    if plots and "screenshot" not in STATE:
        STATE["screenshot"] = chapter
        ARTIFACTS.mkdir(exist_ok=True)
        lab.evaluate("""async (i) => { const nb = window.jupyterapp.shell.currentWidget.content;
                          nb.activeCellIndex = i; await nb.scrollToItem(i, 'start');
                          await new Promise(r => setTimeout(r, 300));
                          const img = nb.widgets[i].node.querySelector('.jp-OutputArea-output img');
                          if (img) img.scrollIntoView({block: 'center'}); }""", plots[0]["i"])
        lab.wait_for_timeout(800)
        lab.screenshot(path=str(ARTIFACTS / "chapter-with-plot.png"))
        print(f"screenshot of {chapter} (a plot in cell {plots[0]['i']}): {ARTIFACTS / 'chapter-with-plot.png'}")
    close(lab)
    assert not opened["dirty"], f"{chapter} shows as modified right after opening (closing it would ask to save)"
    assert "Kernel › Interrupt" in opened["first"] and "Restart" in opened["first"], opened["first"]
    assert opened["first"] == build.browser_note(lang, Path(chapter).name), opened["first"]
    bad = _bad_outputs(cells)
    assert not bad, f"{chapter} in the browser:\n" + "\n".join(bad)
    assert cells, f"{chapter}: no code cells ran"


SWITCH_IN_NOTE = """async () => {
  // the current chapter's first cell (the note), rendered: follow its language switch
  const app = window.jupyterapp;
  const w = app.shell.currentWidget, from = w.context.path;
  const t0 = performance.now();
  let a = null;
  while (!a && performance.now() - t0 < 30000) {
    a = w.content.widgets[0].node.querySelector('.jp-RenderedMarkdown a');
    if (!a) await new Promise(r => setTimeout(r, 200));
  }
  if (!a) return {found: false, html: w.content.widgets[0].node.innerHTML};
  const info = {found: true, text: a.textContent, lang: a.getAttribute('lang'),
                hreflang: a.getAttribute('hreflang'), span: a.closest('[lang]') && a.closest('[lang]').getAttribute('lang')};
  a.click();
  while (performance.now() - t0 < 120000) {
    const cur = app.shell.currentWidget;
    if (cur && cur.context && cur.context.path !== from) {
      await cur.context.ready;
      info.opened = cur.context.path;
      // its kernel started and idle, as OPEN leaves a chapter (closing it earlier leaves
      // JupyterLab's kernel callbacks on a disposed notebook: page errors)
      const kernel = () => cur.sessionContext && cur.sessionContext.session && cur.sessionContext.session.kernel;
      while (!(kernel() && kernel().status === 'idle') && performance.now() - t0 < 300000) {
        await new Promise(r => setTimeout(r, 100));
      }
      info.kernel = kernel() ? kernel().status : 'none';
      info.ms = performance.now() - t0;
      break;
    }
    await new Promise(r => setTimeout(r, 200));
  }
  return info;
}"""

CLOSE_PATH = """async (path) => {
  // save and close one open document (not the current one) and shut its kernel down
  const app = window.jupyterapp;
  for (const w of Array.from(app.shell.widgets('main'))) {
    if (!w.context || w.context.path !== path) continue;
    const session = w.sessionContext && w.sessionContext.session;
    const id = session && session.id;
    await w.context.save();
    w.dispose();
    // JupyterLite may have shut the session down with the widget already: gone either way
    if (id) await app.serviceManager.sessions.shutdown(id).catch(() => null);
  }
}"""


def _close_path(page, path: str) -> None:
    """close() for a document that is not the current one."""
    n = len(STATE["page_errors"])
    page.evaluate(CLOSE_PATH, path)
    page.wait_for_timeout(1500)
    STATE["page_errors"][n:] = [e for e in STATE["page_errors"][n:]
                                if not re.fullmatch(r"Session [0-9a-f-]+ not found", e)]


def test_the_chapters_note_switches_language_in_the_lab(lab):
    """The switch in a chapter's first cell opens the same chapter in the other language,
    in the lab, both ways; the link is marked with the language it leads to."""
    en, zh = (landing.lab_notebook(CHAPTERS[0], lang) for lang in ("en", "zh-CN"))
    lab.evaluate(OPEN, en)
    to_zh = lab.evaluate(SWITCH_IN_NOTE)      # both open now, each with its own kernel
    _close_path(lab, en)
    to_en = lab.evaluate(SWITCH_IN_NOTE) if to_zh.get("opened") else {}
    if to_en.get("opened"):
        _close_path(lab, zh)
    close(lab)
    print("the note's switch, in the lab:", to_zh, to_en)
    assert to_zh.get("found"), f"no link in the note of {en}: {to_zh}"
    assert (to_zh["text"], to_zh["lang"], to_zh.get("opened"), to_zh.get("kernel")) == ("中文", "zh-CN", zh, "idle"), to_zh
    assert (to_en.get("text"), to_en.get("lang"), to_en.get("opened"), to_en.get("kernel")) == \
        ("English", "en", en, "idle"), to_en


# --------------------------------------------------------------------------- grading

def _wrong_p01() -> str:
    """The model answer with a known slip: MLA counted without its rotary key."""
    text = (ROOT / "solutions" / "p01_kv_cache_bytes.py").read_text()
    wrong = text.replace("per_token_layer = d_latent + d_rope", "per_token_layer = d_latent")
    assert wrong != text, "solutions/p01 changed: update the slip this test plants"
    return wrong


# the judge's own note on an in-process run (its wording is the judge's, not this test's)
IN_PROCESS_LINE = re.compile(r"^\s*\(.*\bprocess\b.*\bno time limit\b")


def _normalize(text: str) -> list[str]:
    """Drop or mask what legitimately differs between the browser and the local judge:
    the in-process notes (checked separately), the command's name, the file's folder and
    the elapsed times. Everything else must be equal, line for line."""
    out = []
    for line in text.splitlines():
        if line.startswith("Graded in this browser tab") or IN_PROCESS_LINE.match(line):
            continue
        line = re.sub(r"%judge|python (practice/)?judge\.py", "<judge>", line)
        line = re.sub(r"file: \S*?(p\d\d_\w+\.py)", r"file: \1", line)
        line = re.sub(r"\(\d+(\.\d+)? s\)", "(<time> s)", line)
        line = re.sub(r", \d+(\.\d+)? s\)", ", <time> s)", line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def _local(tmp_path, number: int, filename: str, text: str) -> str:
    f = tmp_path / filename
    f.write_text(text)
    res = subprocess.run([sys.executable, str(ROOT / "judge.py"), str(number), "--file", str(f), "--seed", str(SEED)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    return res.stdout


def test_grading_in_the_browser_matches_the_local_judge(lab, tmp_path):
    right = (ROOT / "solutions" / "p08_absorb_decode.py").read_text()
    wrong = _wrong_p01()
    t0 = time.perf_counter()
    lab.evaluate(WRITE_IN_EDITOR, ["practice/p01_kv_cache_bytes.py", wrong])
    lab.evaluate(WRITE_IN_EDITOR, ["practice/p08_absorb_decode.py", right])
    lab.evaluate(OPEN, "practice/judge.ipynb")
    opened = lab.evaluate(OPENED)
    assert not opened["dirty"], "the judge notebook shows as modified right after opening"
    cells = lab.evaluate(RUN_ALL, ["practice/judge.ipynb", CELL_TIMEOUT_MS])
    assert not _bad_outputs(cells), _bad_outputs(cells)
    overview = "".join("".join(o.get("text", "")) for c in cells for o in c["outputs"])
    assert re.search(r"✗\s+1 kv_cache_bytes\s+failed", overview), overview
    assert re.search(r"✓\s+8 absorb_decode\s+passed", overview), overview
    assert re.search(r"12 triton_inner_loop\s+unavailable: problem 12 needs torch \+ triton, which do not run in the browser", overview), overview

    got = {n: lab.evaluate(EXECUTE, f"%judge {n} --seed {SEED}") for n in (1, 8, 12)}
    canary = lab.evaluate(EXECUTE, "import pyodide.http\ntry:\n    await pyodide.http.pyfetch("
                                   f"{CANARIES[1]!r})\nexcept Exception as e:\n    print('blocked:', type(e).__name__)")
    STATE["kernel_canary"] = canary["text"]
    TIMES["grading"] = time.perf_counter() - t0
    close(lab)

    for n in (1, 8, 12):
        assert got[n]["status"] == "ok", got[n]
    for n in (1, 8):  # the verdict says once that it ran in-process, and what stops a loop
        notes = [l for l in got[n]["text"].splitlines() if "no time limit" in l]
        assert len(notes) == 1 and IN_PROCESS_LINE.match(notes[0]), got[n]["text"]
        assert "Kernel > Restart Kernel" in got[n]["text"]
    assert "✗ FAILED" in got[1]["text"] and "Likely slip:" in got[1]["text"], got[1]["text"]
    assert "✓ PASSED" in got[8]["text"], got[8]["text"]
    assert "needs torch + triton, which do not run in the browser" in got[12]["text"], got[12]["text"]

    local = {1: _local(tmp_path, 1, "p01_kv_cache_bytes.py", wrong),
             8: _local(tmp_path, 8, "p08_absorb_decode.py", right)}
    for n in (1, 8):
        b, l = _normalize(got[n]["text"]), _normalize(local[n])
        assert len(b) >= 4 and not any(IN_PROCESS_LINE.match(x) for x in local[n].splitlines())
        assert b == l, (f"problem {n}: the browser's feedback differs from the local judge's\n"
                        f"--- browser\n" + "\n".join(b) + "\n--- local\n" + "\n".join(l))

    # the edits live in the browser's storage: still there after a reload
    lab.reload()
    lab.wait_for_function("window.jupyterapp && window.jupyterapp.serviceManager", timeout=180_000)
    lab.evaluate("() => window.jupyterapp.started")
    assert lab.evaluate(READ, "practice/p01_kv_cache_bytes.py") == wrong
    assert lab.evaluate(READ, "practice/p08_absorb_decode.py") == right


def test_every_model_answer_passes_in_the_browser(lab):
    """Every problem that needs no GPU is solvable in the browser: its model answer, saved
    as the learner's file, passes there (32-bit wasm: numpy's default int is int32)."""
    from grader import runner
    browser_problems = [p for p in runner.discover() if not p.needs_torch]
    assert len(browser_problems) >= 11
    for p in browser_problems:
        lab.evaluate(WRITE_IN_EDITOR, [f"practice/{p.filename}", (ROOT / "solutions" / p.filename).read_text()])
    lab.evaluate(OPEN, "practice/judge.ipynb")
    t0 = time.perf_counter()
    res = lab.evaluate(EXECUTE, f"import grader.browser\n%judge --seed {SEED + 1}")
    TIMES["all_problems"] = time.perf_counter() - t0
    close(lab)
    assert res["status"] == "ok", res
    for p in browser_problems:
        assert re.search(rf"✓\s+{p.number} {p.slug}\s+passed", res["text"]), \
            f"problem {p.number}'s model answer does not pass in the browser:\n{res['text']}"


def test_restart_stops_an_endless_loop_while_grading(lab):
    """What the judge tells a learner in the browser: Interrupt does not stop a loop there
    (no cross-origin isolation), Kernel > Restart Kernel does, and grading works after it."""
    loop = (ROOT / "solutions" / "p04_choose_path.py").read_text() + \
        "\n\ndef choose_path(*args, **kwargs):  # planted: never returns\n    while True:\n        pass\n"
    lab.evaluate(WRITE_IN_EDITOR, ["practice/p04_choose_path.py", loop])
    lab.evaluate(WRITE_IN_EDITOR, ["practice/p08_absorb_decode.py", (ROOT / "solutions" / "p08_absorb_decode.py").read_text()])
    lab.evaluate(OPEN, "practice/judge.ipynb")
    assert lab.evaluate(EXECUTE, "import grader.browser")["status"] == "ok"
    kernel = "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
    lab.evaluate(f"() => {{ {kernel}.requestExecute({{code: '%judge 4'}}); }}")
    lab.wait_for_timeout(5000)
    assert lab.evaluate(f"() => {kernel}.status") == "busy"
    t0 = time.perf_counter()
    lab.evaluate(f"async () => {{ await {kernel}.restart(); }}")
    lab.wait_for_function(f"{kernel}.status === 'idle'", timeout=300_000)
    TIMES["restart"] = time.perf_counter() - t0
    after = lab.evaluate(EXECUTE, f"import grader.browser\n%judge 8 --seed {SEED}")
    close(lab)
    assert after["status"] == "ok" and "✓ PASSED" in after["text"], after


def test_two_hints_with_a_reload_between(lab):
    """`%judge N --hint` twice, with a page reload between, then once more: hints 1, 2, 3.
    (The counter once lived in a .json in the drive; overwriting it hung the kernel.)"""
    hints = []
    for reload in (False, True, False):
        if reload:
            lab.reload()
            lab.wait_for_function("window.jupyterapp && window.jupyterapp.serviceManager", timeout=180_000)
            lab.evaluate("() => window.jupyterapp.started")
        lab.evaluate(OPEN, "practice/judge.ipynb")
        hints.append(lab.evaluate(EXECUTE_WITHIN, ["import grader.browser\n%judge 4 --hint", 120_000]))
        close(lab)
    for k, h in enumerate(hints, 1):
        assert h["how"] == "done", f"hint {k}: the kernel did not answer in 120 s (hung?): {h}"
        assert f"{k} of 4" in h["text"], f"hint {k}: {h['text']}"
    assert lab.evaluate(READ, "practice/.judge_hints.txt") == "choose_path 3\n"


# --------------------------------------------------------------------------- links

def _links(page) -> list[str]:
    return page.evaluate("""() => [...document.querySelectorAll('a[href], link[href], script[src], img[src]')]
        .map(e => e.getAttribute('href') || e.getAttribute('src'))""")


def _check_links(page, page_url: str, site: Path) -> tuple[list[str], list[str]]:
    """(broken, external) links of the page at page_url."""
    broken, external = [], []
    ids = set(page.evaluate("() => [...document.querySelectorAll('[id]')].map(e => e.id)"))
    for href in _links(page):
        if href.startswith(("data:", "mailto:")):
            continue
        if href.startswith("#"):
            if not {href[1:], urllib.parse.unquote(href[1:])} & ids and href != "#":
                broken.append(f"{href} (no such anchor)")
            continue
        url = urllib.parse.urljoin(page_url, href)
        if urllib.parse.urlparse(url).netloc != urllib.parse.urlparse(page_url).netloc:
            external.append(url)
            continue
        try:
            with urllib.request.urlopen(url.split("#")[0], timeout=30) as r:
                ok = r.status == 200
                body = r.read() if "#" in url and url.split("#")[0].endswith(".html") else b""
        except urllib.error.URLError:
            ok = False
        if not ok:
            broken.append(href)
            continue
        fragment = urllib.parse.unquote(url.partition("#")[2])
        if body and fragment and f'id="{html.escape(fragment)}"'.encode() not in body:
            broken.append(f"{href} (no such anchor in that page)")
        q = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
        if "/lab/lab/" in url and "path" in q:  # a file opened in the lab must be in its contents
            if not (site / "lab" / "files" / q["path"][0]).is_file():
                broken.append(f"{href} (no {q['path'][0]} in lab/files)")
    return broken, external


def test_landing_page_and_book_have_no_broken_links(browser, server, site):
    page = browser.new_page()
    page.goto(server + "index.html")
    broken, external = _check_links(page, server + "index.html", site)
    assert not broken, f"index.html: broken links {broken}"
    text = page.inner_text("body")
    for path in landing.chapters():
        assert landing.title(path) in text, f"index.html lacks chapter {path.name}"
    from grader import runner
    for p in runner.discover():
        assert p.slug in text and p.filename in text, f"index.html lacks problem {p.number}"
    assert "this browser's storage" in text and "Download" in text and "micropip" in text
    hrefs = _links(page)
    for path in landing.chapters():
        assert f"book/{path.stem}.html" in hrefs and any(h.endswith(f"path=notebooks/{path.name}") for h in hrefs)

    for path in landing.chapters():
        url = f"{server}book/{path.stem}.html"
        page.goto(url)
        page.wait_for_load_state("load")
        broken, ext = _check_links(page, url, site)
        external += ext
        assert not broken, f"book/{path.stem}.html: broken links {broken}"
        assert page.title() == landing.title(path), f"book/{path.stem}.html is titled {page.title()!r}"
        run = page.get_attribute("a.run-in-lab", "href")
        assert run and run.endswith(f"path=notebooks/{path.name}"), run
        if "$" in path.read_text():
            page.wait_for_selector("mjx-container", timeout=60_000)  # MathJax, served by the site
        assert "Traceback" not in page.inner_text("body"), f"book/{path.stem}.html shows a traceback"
    print("external links (not followed, never requested):", sorted(set(external)))
    page.close()


def test_the_chinese_landing_page_and_book_have_no_broken_links(browser, server, site):
    """The Chinese edition: zh/index.html and book/zh/ (links one folder deeper than the
    English; ../../README.zh.md is the Chinese landing page), every link and anchor."""
    page = browser.new_page()
    page.goto(server + "zh/index.html")
    assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
    broken, external = _check_links(page, server + "zh/index.html", site)
    assert not broken, f"zh/index.html: broken links {broken}"
    text, hrefs = page.inner_text("body"), _links(page)
    for name in ZH_CHAPTERS:
        zh = ROOT / "notebooks" / name
        assert landing.title(zh) in text, f"zh/index.html lacks chapter {name}"
        assert f"../book/{Path(name).with_suffix('.html')}" in hrefs
        assert f"../lab/lab/index.html?path={landing.lab_notebook(zh.name, 'zh-CN')}" in hrefs
    for name in ZH_CHAPTERS:
        zh = ROOT / "notebooks" / name
        url = f"{server}book/{Path(name).with_suffix('.html')}"
        page.goto(url)
        page.wait_for_load_state("load")
        broken, ext = _check_links(page, url, site)
        external += ext
        assert not broken, f"book/{name}: broken links {broken}"
        assert page.evaluate("() => document.documentElement.lang") == "zh-CN", f"book/{name}: lang"
        assert page.title() == landing.title(zh), f"book/{name} is titled {page.title()!r}"
        run = page.get_attribute("a.run-in-lab", "href")
        assert run and run.endswith(f"path={landing.lab_notebook(zh.name, 'zh-CN')}"), run
        if "$" in zh.read_text():
            page.wait_for_selector("mjx-container", timeout=60_000)
        assert "Traceback" not in page.inner_text("body"), f"book/{name} shows a traceback"
    print("external links of the Chinese book (not followed, never requested):", sorted(set(external)))
    page.close()


SWITCH = "nav .lang-switch a"


def test_the_language_switch_goes_both_ways(browser, server):
    """On a landing page and on a book page: the switch leads to the same page in the other
    language (its lang set), and that page's switch leads back."""
    page = browser.new_page()
    for start, other in (("index.html", "zh/index.html"), ("book/01_kv_cache.html", "book/zh/01_kv_cache.html")):
        page.goto(server + start)
        assert page.evaluate("() => document.documentElement.lang") == "en"
        assert page.get_attribute(SWITCH, "lang") == "zh-CN"
        page.click(SWITCH)
        page.wait_for_load_state("load")
        assert page.url == server + other, f"{start}: the switch went to {page.url}"
        assert page.evaluate("() => document.documentElement.lang") == "zh-CN"
        assert page.get_attribute(SWITCH, "lang") == "en"
        page.click(SWITCH)
        page.wait_for_load_state("load")
        assert page.url == server + start, f"{other}: the switch went to {page.url}"
        assert page.evaluate("() => document.documentElement.lang") == "en"
    page.close()


@pytest.mark.parametrize("index", ["index.html", "zh/index.html"])
def test_landing_page_fits_a_phone(browser, server, index):
    """On a 390 px wide screen nothing scrolls sideways and every "edit" link is on screen."""
    page = browser.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(server + index)
    edit = "edit" if index == "index.html" else "编辑"
    got = page.evaluate("""(edit) => ({width: document.documentElement.scrollWidth,
        edits: [...document.querySelectorAll('a')].filter(a => a.textContent === edit)
               .map(a => a.getBoundingClientRect()).map(r => [r.left, r.right, r.width])})""", edit)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"landing-390px{'-zh' if 'zh' in index else ''}.png"), full_page=True)
    page.close()
    assert got["width"] <= 390, f"{index} is {got['width']} px wide on a 390 px phone"
    assert got["edits"] and all(0 <= left and right <= 390 and w > 0 for left, right, w in got["edits"]), got


# --------------------------------------------------------------------------- network (last)

def test_no_request_leaves_127_0_0_1(lab):
    """Runs after the others (file order): every request they made stayed on the site."""
    outside = STATE["outside"]
    assert CANARIES[0] in outside, f"the page's canary request was not seen: {outside}"
    if "kernel_canary" in STATE:
        assert CANARIES[1] in outside, f"the kernel's canary request was not seen: {outside}; " \
                                       f"kernel said {STATE['kernel_canary']!r}"
    others = [u for u in outside if u not in CANARIES]
    assert not others, "requests that tried to leave 127.0.0.1 (aborted):\n" + "\n".join(sorted(set(others)))
    assert not STATE["page_errors"], f"page errors: {STATE['page_errors']}"
    assert not STATE["http_errors"], "requests the site answered with an error:\n" + "\n".join(STATE["http_errors"])
