"""The judge in Simplified Chinese (grader/lang.py, grader/texts.py, i18n/judge.py): the
catalogue is complete, in step with the code and the specs, compiled, and keeps every
placeholder, number and code name; each way of choosing the language works; and the
language changes words only -- never a verdict, a score or a JSON key."""
from __future__ import annotations

import argparse
import inspect
import io
import json
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from grader import cli, hints, lang, report, runner, texts
from i18n import judge as J

ROOT = Path(__file__).resolve().parent.parent
PROBLEMS = runner.discover()


def _mistake_source(number: int, name: str) -> str:
    """A named mistake's learner file (its mistakes.diff entry, expanded)."""
    return next(m.source for p in PROBLEMS if p.number == number for m in p.mistakes if m.name == name)
ZH = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def fresh_language(monkeypatch):
    """Each test decides the language from scratch: no --lang remembered from another,
    no locale from the machine running the tests."""
    for var in lang.ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    lang.forget()
    yield
    lang.forget()
    hints.use_folder(None)


def run_cli(*argv, practice=None):
    """cli.main in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(list(argv), practice=practice)
        except SystemExit as e:   # --help
            code = e.code
    return code, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------- the catalogue

def test_catalogue_is_complete_in_step_and_compiled():
    """Nothing untranslated or fuzzy, every {placeholder} / %(name)s, number, `code` name,
    $formula$ and link kept, no entry missing or left over, and the committed .mo equals
    the .po (`python -m i18n check judge` prints the same list)."""
    found = J.problems()
    assert not found, f"{len(found)} to do (python -m i18n update judge, then translate):\n  " + "\n  ".join(found[:20])


def test_every_problem_has_every_entry_translated():
    """Derived from the specs: each problem's title, statement, hints and named mistakes
    come out in Chinese from the compiled catalogue (the judge's own lookup)."""
    lang.use("zh")
    missing = []
    for p in PROBLEMS:
        k = texts.key(p)
        pairs = [("title", p.title, texts.title(p)), ("statement", p.statement, texts.statement(p))]
        pairs += [(f"hint {n}", h, texts.hint(p, n)) for n, h in enumerate(p.hints, 1)]
        pairs += [(f"mistake {m.name}", m.message, texts.mistake(p, m.message)) for m in p.mistakes]
        missing += [f"{k} {what}" for what, en, zh in pairs if zh == en or not ZH.search(zh)]
    assert not missing, missing[:20]
    assert len(PROBLEMS) >= 18
    n = sum(2 + len(p.hints) + len(p.mistakes) for p in PROBLEMS)
    print(f"{n} problem entries for {len(PROBLEMS)} problems; catalogue has {len(J.entries(J.load()))} entries")


def test_the_read_only_rule_is_translated_once_and_appended():
    lang.use("zh")
    p = next(p for p in PROBLEMS if not p.may_change_inputs)
    own, rule = texts.statement_parts(p)
    assert rule is not None and not ZH.search(own[:0])
    zh = texts.statement(p)
    assert zh.endswith(lang._(rule)) and "输入是只读的" in zh


def identifiers(text: str) -> set[str]:
    """Code names a statement mentions: backticked spans and snake_case / dotted identifiers."""
    ticks = set(re.findall(r"`([^`\n]+)`", text))
    words = re.findall(r"(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", text)
    names = {w for w in words if "_" in w or "." in w}
    return ticks | names


@pytest.mark.parametrize("problem", PROBLEMS, ids=[f"p{p.number:02d}" for p in PROBLEMS])
def test_chinese_statement_names_the_same_functions_parameters_and_numbers(problem):
    lang.use("en")
    english = texts.statement(problem)
    lang.use("zh")
    chinese = texts.statement(problem)
    assert chinese != english and ZH.search(chinese)
    assert identifiers(chinese) == identifiers(english), (
        f"only English: {sorted(identifiers(english) - identifiers(chinese))}, "
        f"only Chinese: {sorted(identifiers(chinese) - identifiers(english))}")
    for fn in problem.functions:
        assert fn in chinese
    from i18n.notebooks import same_facts
    assert same_facts(english, chinese) == []


def test_the_checks_can_fail():
    assert J.markup_differs("{n} more failing case(s)", "另有几个失败用例", data=False)
    assert J.markup_differs("%(prog)s: error: %(message)s\n", "%(prog)s：错误：%(message)s", data=False)
    assert J.markup_differs("pages 0 .. 511 of `c_kv`", "第 0 .. 512 页 `c_kv`", data=True)
    assert J.markup_differs("call `paged_gather`", "调用 `gather`", data=True)
    assert not J.markup_differs("{n} not run", "{n} 个未运行", data=False)
    assert identifiers("use `w_uk` and kv_cache.shape") == {"w_uk", "kv_cache.shape"}


def test_a_changed_english_becomes_fuzzy_until_retranslated(tmp_path, monkeypatch):
    """The catalogue's own update: a changed hint keeps its old translation, marked fuzzy
    with the old English; the check fails until someone re-translates it."""
    po = tmp_path / "judge.po"
    po.write_bytes(J.CATALOG.read_bytes())
    mo = tmp_path / "judge.mo"
    real = J.data_messages()
    key = next(k for k in real if k[0] == "p04 hint 2")
    changed = {(k if k != key else (k[0], k[1] + " Check it on decode.")): v for k, v in real.items()}
    monkeypatch.setattr(J, "data_messages", lambda: changed)
    counts = J.update(po, mo=mo)
    assert counts["fuzzy"] == 1 and counts["new"] == 0
    entry = J.entries(J.load(po))[(key[0], key[1] + " Check it on decode.")]
    assert "fuzzy" in entry.flags and entry.previous_msgid == key[1] and ZH.search(entry.msgstr)
    assert any("fuzzy" in p for p in J.problems(po)), "a fuzzy entry must fail the check"
    # the compiled catalogue leaves the fuzzy entry out: the judge shows the new English
    table = J.mo_table(mo)
    assert f"p04 hint 2\x04{key[1]} Check it on decode." not in table and len(table) > 300


def test_argparse_words_the_catalogue_carries_are_still_argparse_s():
    src = inspect.getsource(argparse)
    assert all(f"_({w!r})" in src or f'_("{w}")' in src for w in cli.ARGPARSE_WORDS if "\n" not in w)
    assert "'%(prog)s: error: %(message)s\\n'" in src


# --------------------------------------------------------------------------- choosing the language

@pytest.mark.parametrize("code, want", [("zh", "zh_CN"), ("zh_CN", "zh_CN"), ("zh-CN", "zh_CN"),
                                        ("zh_CN.UTF-8", "zh_CN"), ("zh_Hans", "zh_CN"), ("en", "en"),
                                        ("en_US.UTF-8", "en"), ("C", "en"), ("C.UTF-8", "en"),
                                        ("POSIX", "en"), ("fr_FR.UTF-8", None), ("", None)])
def test_normalize(code, want):
    assert lang.normalize(code) == want


def test_environment_order_is_gettext_s():
    env = {"LANGUAGE": "zh_CN:en", "LC_ALL": "en_US.UTF-8", "LANG": "en_US.UTF-8"}
    assert lang.choose(environ=env) == "zh_CN"                   # LANGUAGE first, a list
    assert lang.choose(environ={"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}) == "en"
    assert lang.choose(environ={"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US"}) == "zh_CN"
    assert lang.choose(environ={"LANG": "fr_FR.UTF-8"}) == "en"  # a locale we lack: English, quietly
    assert lang.choose(environ={}) == "en"


def test_lang_option_selects_chinese():
    code, out, err = run_cli("4", "--statement", "--lang", "zh")
    assert code == 0 and "习题 4" in out and "attention_flops" in out and not err.strip()
    code, out, _ = run_cli("--lang=zh", "--list")
    assert code == 0 and "展开还是吸收" in out


def test_setting_file_selects_chinese_and_lang_en_overrides_it(tmp_path):
    (tmp_path / ".judge_lang").write_text("zh_CN\n")
    hints.use_folder(tmp_path)
    code, out, _ = run_cli("4", "--statement")
    assert code == 0 and "习题 4" in out
    lang.forget()
    code, out, _ = run_cli("4", "--statement", "--lang", "en")
    assert code == 0 and "Problem 4" in out and not ZH.search(out)


def test_environment_selects_chinese(monkeypatch):
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    code, out, _ = run_cli("--list")
    assert code == 0 and "展开还是吸收" in out


def test_unknown_language_falls_back_to_english_with_one_line(tmp_path):
    code, out, err = run_cli("4", "--statement", "--lang", "fr")
    assert code == 0 and "Problem 4" in out and not ZH.search(out)
    assert len(err.strip().splitlines()) == 1 and "--lang fr" in err and "English" in err
    lang.forget()
    (tmp_path / ".judge_lang").write_text("klingon\n")
    hints.use_folder(tmp_path)
    code, out, err = run_cli("4", "--statement")
    assert code == 0 and "Problem 4" in out and "klingon" in err


def test_help_is_chinese_including_argparse_s_words():
    code, out, _ = run_cli("--help", "--lang", "zh")
    assert code == 0
    assert out.startswith("用法：") and "选项" in out and "显示此帮助信息并退出" in out and "显示该习题的下一条提示" in out
    assert argparse._("usage: ") == "usage: "    # argparse's own name is restored afterwards


def test_lang_is_remembered_for_the_session_like_percent_judge():
    """%judge --lang zh once; later calls without --lang (and check()) keep speaking it."""
    run_cli("--list", "--lang", "zh")
    code, out, _ = run_cli("--list")
    assert "展开还是吸收" in out
    run_cli("--list", "--lang", "en")
    code, out, _ = run_cli("--list")
    assert not ZH.search(out)


def test_json_keys_and_statuses_are_english_in_both(tmp_path):
    stub = tmp_path / "p04_choose_path.py"
    stub.write_text((ROOT / "practice" / "p04_choose_path.py").read_text())
    wrong = tmp_path / "wrong.py"   # the named mistake "non-causal pairs", with a choose_path
    wrong.write_text(_mistake_source(4, "non-causal pairs")
                     + "\n\ndef choose_path(n_new, n_ctx, **shapes):\n"
                       "    f = attention_flops(n_new, n_ctx, **shapes)\n"
                       "    return 'expand' if f['expand'] < f['absorb'] else 'absorb'\n")
    for f in (stub, wrong):
        got = {}
        for code in ("en", "zh"):
            lang.forget()
            rc, out, _ = run_cli("4", "--file", str(f), "--seed", "5", "--json", "--lang", code)
            got[code] = (rc, json.loads(out))
        (rc_en, en), (rc_zh, zh) = got["en"], got["zh"]
        assert rc_en == rc_zh
        assert en.keys() == zh.keys() and en["tests"][0].keys() == zh["tests"][0].keys()
        strip = lambda d: {k: v for k, v in d.items() if k != "tests"}  # noqa: E731
        assert strip(en) == strip(zh)
        assert {k: v for k, v in en["tests"][0].items() if k != "message"} == \
               {k: v for k, v in zh["tests"][0].items() if k != "message"}
        assert ZH.search(zh["tests"][0]["message"]) and not ZH.search(en["tests"][0]["message"])
    assert "可能的失误" in zh["tests"][0]["message"] and "非因果" in zh["tests"][0]["message"]


def test_chinese_points_to_the_chinese_chapters_and_its_commands_keep_the_language(tmp_path):
    """In Chinese the judge sends the learner to notebooks/zh/ (every problem's Chinese
    chapter exists), and the commands it suggests keep the --lang it was given where a new
    run would otherwise speak another language; the JSON's test_code stays the same."""
    for p in PROBLEMS:
        lang.use("zh")
        assert texts.chapter(p) == p.chapter.replace("notebooks/", "notebooks/zh/", 1)
        assert (ROOT / texts.chapter(p)).is_file(), texts.chapter(p)
        lang.use("en")
        assert texts.chapter(p) == p.chapter
    code, out, _ = run_cli("4", "--statement", "--lang", "zh")
    assert "notebooks/zh/04_flops_and_path_choice.ipynb" in out and "python practice/judge.py --lang zh 4" in out
    stub = tmp_path / "p04_choose_path.py"
    stub.write_text((ROOT / "practice" / "p04_choose_path.py").read_text())
    lang.forget()
    code, out, _ = run_cli("4", "--file", str(stub), "--lang", "zh")
    assert "notebooks/zh/04_flops_and_path_choice.ipynb" in out and "`python practice/judge.py --lang zh 4 --hint`" in out
    assert not re.search(r"python practice/judge\.py (?!--lang zh)", out), out
    lang.forget()
    code, out, _ = run_cli("4", "--statement")                       # English: as before
    assert "notebooks/04_flops_and_path_choice.ipynb" in out and "--lang" not in out
    lang.forget()
    (tmp_path / ".judge_lang").write_text("zh_CN\n")                 # the setting file keeps Chinese by itself
    hints.use_folder(tmp_path)
    code, out, _ = run_cli("4", "--statement")
    assert "notebooks/zh/04_flops_and_path_choice.ipynb" in out and "--lang" not in out
    lang.forget()
    code, out, _ = run_cli("4", "--statement", "--lang", "en")        # ... so --lang en must be kept
    assert "python practice/judge.py --lang en 4" in out and not ZH.search(out)


def test_the_browser_names_the_chinese_chapter_as_its_lab_does(monkeypatch):
    import sys
    sys.path.insert(0, str(ROOT / "web"))
    import landing
    monkeypatch.setattr(texts, "IN_BROWSER", True)
    lang.use("zh")
    p = PROBLEMS[0]
    assert texts.chapter(p) == landing.lab_notebook(Path(p.chapter).name, "zh-CN")


EMPHASIS = re.compile(r"\*\*(?=\S)[^*\n]*?\S\*\*|__(?=\S)[^_\n]*?\S__")


def test_named_mistakes_and_hints_print_as_plain_text():
    """The terminal shows a named mistake's message and a hint as they are: no Markdown
    emphasis in either language (English emphasises with capitals)."""
    found = [f"p{p.number:02d} {what}: {text[:60]!r}" for p in PROBLEMS
             for what, text in ([("hint", h) for h in p.hints] + [(f"mistake {m.name}", m.message) for m in p.mistakes])
             if EMPHASIS.search(text)]
    found += [f"[{e.msgctxt}] {e.msgstr[:60]!r}" for e in J.load() if not e.obsolete and e.msgctxt
              and re.search(r" (hint \d+|mistake .*)$", e.msgctxt) and EMPHASIS.search(e.msgstr)]
    assert not found, "Markdown emphasis prints literally in a terminal:\n  " + "\n  ".join(found)
    assert EMPHASIS.search("取**剩余**预算") and not EMPHASIS.search("2.0 ** -6 and x ** 2")


# --------------------------------------------------------------------------- same verdicts

def corpus(numbers=None) -> list[tuple[Path, int]]:
    """Every problem's attempts (its corpus and its named mistakes: tests/corpus/probe.py,
    slip files expanded into a temporary folder), runnable here."""
    sys.path.insert(0, str(ROOT / "tests" / "corpus"))
    import probe
    runnable = {p.number for p in PROBLEMS if not runner.missing_requirements(p)}
    return [(a.path, a.number) for a in probe.attempts(numbers)
            if a.number in runnable]


def _compare(attempts, en: dict, zh: dict, regrade, seed) -> list[str]:
    """Identical statuses and scores for every attempt; identical case verdicts, reasons
    and named mistakes where the problem is deterministic here (numpy: problem 12's
    interpreted Triton reads whatever an out-of-bounds load finds, so its case details may
    differ between two gradings in one language), unless two English gradings of the
    attempt differ too (a memory hog can stop at another case under load); Chinese words
    in the Chinese lines. ``attempts``: [(key, (path, number))]; ``regrade`` grades one
    (path, number) again."""
    bad = []
    verdict = ("status", "score", "problem")   # what a grade is: the same in both, always
    for key, (path, n) in attempts:
        lang.use("en", remember=True)
        a = _render(en[key], seed)
        lang.use("zh", remember=True)
        b = _render(zh[key], seed)
        details = [k for k in a if k != "lines" and a[k] != b[k]]
        if details and not set(details) & set(verdict):
            if next(p for p in PROBLEMS if p.number == n).needs_torch:
                details = []
            else:   # English must be steady for the difference to be the language's
                lang.use("en", remember=True)
                again = _render(regrade((path, n)), seed)
                if all(again[k] == a[k] for k in details):   # English is steady: Chinese once more
                    lang.use("zh", remember=True)
                    again = _render(regrade((path, n)), seed)
                    details = [k for k in details if again[k] != a[k]]
                else:
                    details = []
        if details or not ZH.search(b["lines"]) or a["lines"] == b["lines"]:
            bad.append(f"{path.name}: {details or 'lines'}: en {[a[k] for k in verdict]}, "
                       f"zh {[b[k] for k in verdict]}")
    lang.forget()
    return bad


def same_verdicts_in_both(attempts, seed=1):
    """Grade each attempt in English and in Chinese (two gradings each), then _compare."""
    # lang is per process: grade the two languages in two passes, not interleaved in threads
    t0 = time.monotonic()
    results = {}
    for language in ("en", "zh"):
        with ThreadPoolExecutor(max_workers=2) as pool:
            lang.use(language, remember=True)
            results[language] = dict(enumerate(pool.map(lambda a: _grade_only(a, seed), attempts)))
    took = time.monotonic() - t0
    return _compare(list(enumerate(attempts)), results["en"], results["zh"],
                    lambda a: _grade_only(a, seed), seed), took


def _grade_only(item, seed):
    path, n = item
    return runner.grade(next(p for p in PROBLEMS if p.number == n), path, seed)


def _render(r, seed) -> dict:
    data = report.to_json([r], seed=seed)["tests"][0]
    lines = report.status_line(r) + "\n" + report.details(r) + "\n" + report.summary([r])
    return {"status": data["status"], "score": data["score"], "problem": r.status.value,
            "cases": [o.status.value for o in r.outcomes], "mistakes": [o.mistake for o in r.outcomes],
            "reason": r.reason, "keys": sorted(data), "lines": lines}


def test_same_verdicts_in_both_languages_on_a_sample():
    """Problem 16 (numpy, fast): every corpus file and named mistake, graded once in
    each language (the whole corpus: the slow test below)."""
    attempts = corpus({16})
    bad, took = same_verdicts_in_both(attempts)
    print(f"{len(attempts)} attempts graded in English and in Chinese in {took:.1f} s")
    assert len(attempts) >= 15 and not bad, bad[:10]


@pytest.mark.slow
def test_every_problem_grades_the_same_in_both_languages(tmp_path):
    """Each problem's first named mistake and its model answer, graded in English and again
    in Chinese (the sample above does every attempt of problem 16)."""
    attempts = []
    for p in PROBLEMS:
        if runner.missing_requirements(p) or not p.mistakes:
            continue
        mistake = tmp_path / f"p{p.number:02d}_{p.slug}.py"
        mistake.write_text(p.mistakes[0].source)
        attempts.append((mistake, p.number))
        attempts.append((ROOT / "solutions" / f"p{p.number:02d}_{p.slug}.py", p.number))
    bad, took = same_verdicts_in_both(attempts)
    print(f"{len(attempts)} attempts of {len(attempts) // 2} problems graded in both languages in {took:.1f} s")
    assert len(attempts) >= 2 * 17 and not bad, bad[:10]


@pytest.mark.slow
def test_every_corpus_verdict_reads_in_chinese():
    """Every corpus attempt and named mistake, graded once on the corpus test's seeds
    (tests/test_judge_corpus.py's English grading: a verdict is composed once, in English,
    and only shown in a language), then shown in both: the Chinese report is Chinese, and
    every failing case's message the catalogue translates is shown translated."""
    from grader.lang import Said
    from tests import test_judge_corpus as corpus_test
    en = corpus_test.graded_in("en")
    bad, said_messages = [], 0
    for a in corpus_test.RUNNABLE:
        r = en[a.name]
        lang.use("en", remember=True)
        english = _render(r, corpus_test.SEEDS[0])
        messages = [o.message for o in r.outcomes if o.message] + ([r.message] if r.message else [])
        lang.use("zh", remember=True)
        chinese = _render(r, corpus_test.SEEDS[0])
        untranslated = [m for m in messages if isinstance(m, Said) and lang._(m.template) != m.template
                        and lang.say(m) == str(m)]
        said_messages += sum(isinstance(m, Said) for m in messages)
        if not ZH.search(chinese["lines"]) or chinese["lines"] == english["lines"] or untranslated:
            bad.append(f"{a.name}: {untranslated[:1] or 'lines'}")
    lang.forget()
    print(f"{len(corpus_test.RUNNABLE)} attempts shown in both languages ({said_messages} catalogue messages)")
    assert len(corpus_test.RUNNABLE) >= 300 and said_messages > 1000 and not bad, bad[:10]


def test_the_teacher_s_gradebook_is_english_in_any_locale(monkeypatch, tmp_path):
    """classroom grade writes the same bytes on every machine: its records are English even
    where the locale is Chinese, and the language in force is restored afterwards."""
    from classroom import grade
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert lang.current() == "zh_CN"
    wrong = tmp_path / "p04_choose_path.py"
    wrong.write_text(_mistake_source(4, "non-causal pairs")
                     + "\n\ndef choose_path(n_new, n_ctx, **shapes):\n    return 'absorb'\n")
    r = runner.grade(next(p for p in PROBLEMS if p.number == 4), wrong, 5)
    assert ZH.search(report.failure_text(r))
    rec = grade.record_of(r, None)
    text = json.dumps(rec, ensure_ascii=False)
    assert not ZH.search(text) and "Likely slip" in text
    assert lang.current() == "zh_CN" and ZH.search(report.failure_text(r))


def test_the_browser_wheel_and_a_pip_install_carry_the_catalogue(tmp_path):
    """The browser's course wheel (web/build.py, pyproject's package data) holds the
    compiled catalogue where grader/lang.py looks for it, and it reads there with the
    standard library alone (what Pyodide has)."""
    import gettext
    import sys
    import zipfile
    sys.path.insert(0, str(ROOT / "web"))
    try:
        import build
    finally:
        sys.path.remove(str(ROOT / "web"))
    wheel = build.course_wheel(tmp_path / "wheel")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "site")
    rel = J.MO.relative_to(ROOT).as_posix()
    assert (tmp_path / "site" / rel).read_bytes() == J.MO.read_bytes()
    t = gettext.translation(lang.DOMAIN, localedir=str(tmp_path / "site" / "grader" / "locale"),
                            languages=["zh_CN"])
    assert t.gettext("Everything here passes.") == "这里的习题全部通过。"


def test_percent_judge_lang_holds_for_the_session_and_reaches_check(tmp_path, monkeypatch, stubs, capsys):
    """The browser (and a notebook): `%judge --lang zh` once; `%judge` and statement()/check()
    speak Chinese afterwards, `%judge --lang en` switches back; the drive's .judge_lang
    chooses too."""
    import shutil
    from grader import browser, notebook
    d = tmp_path / "practice"
    shutil.copytree(stubs, d)
    monkeypatch.chdir(d)
    monkeypatch.setattr(hints, "_folder", None)
    assert browser.judge("4 --statement --lang zh") == 0
    assert "习题 4" in capsys.readouterr().out
    assert browser.judge("--list") == 0 and "展开还是吸收" in capsys.readouterr().out
    notebook.statement(4)
    assert "用这行检查" in capsys.readouterr().out
    r = notebook.check(4, attention_flops=lambda **k: {"expand": 1, "absorb": 2},
                       choose_path=lambda **k: "absorb", isolate=False)
    assert not r.passed and "未通过" in capsys.readouterr().out
    assert browser.judge("--list --lang en") == 0 and not ZH.search(capsys.readouterr().out)
    lang.forget()
    (d / ".judge_lang").write_text("zh_CN\n")
    assert browser.judge("--list") == 0 and "展开还是吸收" in capsys.readouterr().out


def test_a_verdict_is_english_text_that_can_be_said_again():
    """lang.Said: the English string everywhere (JSON, gradebook, ==), its template and
    values kept so that report shows it in the current language; it survives pickling (the
    teacher's worker processes)."""
    import pickle
    from grader.spec import compare_choice, compare_scalar
    v = compare_choice("choose_path(...)", "absorb", "expand", ("expand", "absorb"))
    assert v.message == "choose_path(...) returned 'expand', expected 'absorb'."
    assert json.dumps(v.message) == json.dumps(str(v.message))
    lang.use("zh")
    assert lang.say(v.message) == "choose_path(...) 返回了 'expand'，期望 'absorb'。"
    w = compare_scalar("bytes", 2_302_672_896, 2_302_672_895, rtol=0)
    back = pickle.loads(pickle.dumps(w.message))
    assert back == w.message and lang.say(back) == lang.say(w.message) and "2,302,672,896" in lang.say(back)
    assert lang.say("a plain string") == "a plain string" and lang.say(None) is None


def test_a_verdict_keeps_its_language_through_the_records_and_the_judge(tmp_path):
    """Records cut every text to a cap; a short Said must come out a Said (a str() there
    made every check's message English under --lang zh), and a huge one plain text."""
    from grader.lang import Said, said
    from grader.records import MESSAGE_CAP, CaseOutcome, ProblemResult
    problem = runner.find(19)
    case = problem.make_cases(0)[0]
    short = said("your file could not be imported:\n{message}", message="boom")
    o, r = CaseOutcome(case).fail(short), ProblemResult(problem, "x.py").broken(short)
    huge = CaseOutcome(case).fail(said("{fn} raised an exception:\n{message}", fn="f", message="x" * (2 * MESSAGE_CAP)))
    assert isinstance(o.message, Said) and isinstance(r.message, Said) and not isinstance(huge.message, Said)
    assert len(huge.message) < MESSAGE_CAP + 100
    lang.use("zh")
    assert lang.say(o.message).startswith("无法导入你的文件") and lang.say(r.message) == lang.say(o.message)
    # end to end: a check's message, graded by the judge's command in Chinese
    wrong = tmp_path / "p19_tile_plan.py"
    wrong.write_text(_mistake_source(19, "mask aligned top-left"))
    out = subprocess.run([sys.executable, str(ROOT / "practice" / "judge.py"), "19", "--file", str(wrong),
                          "--lang", "zh", "--seed", "3"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    first = next(l for l in out.stdout.splitlines() if l.strip().startswith("tile_plan"))
    assert "entries differ" not in first and ZH.search(first), out.stdout


def test_hints_in_chinese_count_like_english_ones(tmp_path):
    hints.use_folder(tmp_path)
    code, out, _ = run_cli("4", "--hint", "--lang", "zh")
    p4 = next(p for p in PROBLEMS if p.number == 4)
    assert code == 0 and "已显示 1 / 4 条" in out and texts.hint(p4, 1) in out
    code, out, _ = run_cli("4", "--hint", "--lang", "en")
    assert "2 of 4" in out and p4.hints[1] in out
    assert (tmp_path / ".judge_hints.txt").read_text() == "choose_path 2\n"


def test_the_judge_speaks_chinese_without_polib_or_babel():
    """A learner's install needs neither: the judge reads the committed .mo with the
    standard library (polib and Babel are the maintainers' tools)."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['polib'] = None; sys.modules['babel'] = None\n"
            "from grader import cli; sys.exit(cli.main(['4', '--statement', '--lang', 'zh']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and "习题 4" in r.stdout, r.stderr[-2000:]
