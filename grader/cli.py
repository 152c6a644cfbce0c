"""The judge's command line: ``python practice/judge.py`` (``python judge.py`` is the same).

  judge.py                 grade every problem: a line each as it goes, then a summary
  judge.py 4 | choose_path grade one problem with full feedback
  judge.py 4 --hint        reveal the next hint for problem 4
  judge.py 4 --statement   print what problem 4 asks for
  judge.py 4 --file F.py   grade F.py as problem 4
  judge.py 4 --seed N      rerun with the seed a failing hidden case printed
  judge.py --watch [4]     re-grade whenever a practice file is saved (Ctrl-C to stop)
  judge.py --json          Exercism results.json v3 + Gradescope score/max_score
                           (--output practice/results.json also writes it to a file)
  judge.py --solutions     course check: every solution passes, every stub is "not started"
  judge.py --lang zh       speak Simplified Chinese (or: practice/.judge_lang, LANG=zh_CN.UTF-8;
                           grader/lang.py says the order)

The browser's ``%judge`` (grader/browser.py) is this command line, on the browser's
practice folder (``main(..., practice=...)``); there every problem is graded in this
process, one after the other (no subprocesses, no threads).

Exit codes. The overview (no problem, no --json) is a progress report: 0 whatever the
progress, so a learner's first run does not end in an error (--strict: 1 unless all
pass). One problem, --file and --json: 0 if and only if everything graded passes, 1
otherwise. --solutions: 0 if the course is consistent. 2: a usage error or a broken judge.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import hints, lang, report, runner, seeds, texts
from .lang import _, N_
from .records import Isolation, ProblemStatus
from .report import PROG


# --------------------------------------------------------------------------- hints

def hints_shown(problem) -> int:
    return hints.shown(problem)  # one counter: the command line, check() and %judge


def reveal_hint(problem) -> str:
    n = hints.reveal(problem)
    if not problem.hints:
        return _("Problem {number} has no hints; re-read {chapter}.").format(
            number=problem.number, chapter=texts.chapter(problem))
    lines = [_("Hints for problem {number} ({slug}), {n} of {total}:").format(
        number=problem.number, slug=problem.slug, n=n, total=len(problem.hints))]
    for k in range(1, n + 1):
        lines.append(f"  {k}. {texts.hint(problem, k)}")
    if n == len(problem.hints):
        lines.append("  " + _("That was the last hint; the derivation is in {chapter}.").format(
            chapter=texts.chapter(problem)))
    return "\n".join(lines)


# --------------------------------------------------------------------------- grading

def _seed_arg(text: str) -> int:
    try:
        return seeds.parse(text, "--seed")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def grade_many(problems, path_of, seed, workers=None, on_result=None):
    """Grade problems in parallel (one after the other in the browser, which has no
    threads); call on_result in problem order as results arrive."""
    workers = 1 if runner.IN_BROWSER else workers or max(1, min(len(problems), os.cpu_count() or 1))
    if workers == 1:
        results = []
        for p in problems:
            results.append(runner.grade(p, path_of(p), seed))
            if on_result:
                on_result(results[-1])
        return results
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {}
        for p in sorted(problems, key=_heavy_first):  # slow starters first, report in order
            futures[p.number] = pool.submit(runner.grade, p, path_of(p), seed)
        futures = [futures[p.number] for p in problems]
        results = []
        for f in futures:
            r = f.result()
            results.append(r)
            if on_result:
                on_result(r)
    return results


def _heavy_first(problem) -> int:
    """Problems whose child imports torch/triton take seconds to start: submit them first."""
    return 0 if problem.needs_torch else 1


def _print(*a):
    print(*a, flush=True)


def cmd_solutions(problems, seed, prog) -> int:
    """Every solution passes and every stub is 'not started' (rustlings' dev check)."""
    t0 = time.monotonic()
    _print(f"Checking {len(problems)} problems: solutions/ must pass, practice/ stubs must be "
           f"'not started' (seed {seed}).")
    jobs = []
    for p in problems:
        jobs.append((p, runner.SOLUTIONS / p.filename))  # must pass
        jobs.append((p, runner.PRACTICE / p.filename))   # must be "not started"
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    bad = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        order = sorted(range(len(jobs)), key=lambda k: _heavy_first(jobs[k][0]))
        futs = [None] * len(jobs)
        for k in order:
            futs[k] = pool.submit(runner.grade, jobs[k][0], jobs[k][1], seed)
        for k in range(0, len(jobs), 2):
            p = jobs[k][0]
            sol, stub = futs[k].result(), futs[k + 1].result()
            ok_sol = sol.status in (ProblemStatus.PASSED, ProblemStatus.UNAVAILABLE)
            ok_stub = stub.status in (ProblemStatus.NOT_STARTED, ProblemStatus.UNAVAILABLE)
            mark = "✓" if ok_sol and ok_stub else "✗"
            bad += not (ok_sol and ok_stub)
            note = "" if sol.status is not ProblemStatus.UNAVAILABLE else " (not checked: " + report.headline(sol) + ")"
            _print(f"{mark} {p.number:>2} {p.slug:<20} solution {sol.status} ({sol.elapsed:.1f} s), "
                   f"stub {stub.status}{note}")
            if not ok_sol:
                _print(report._indent(report.details(sol, prog), 4))
            if not ok_stub:
                _print(f"    the stub should raise NotImplementedError in every function; got: "
                       f"{report.headline(stub) if stub.status is not ProblemStatus.FAILED else report.status_line(stub)}")
    _print(f"{'OK' if not bad else f'{bad} problem(s) wrong'}: {len(problems)} problems checked in "
           f"{time.monotonic() - t0:.1f} s.")
    return 1 if bad else 0


def _watch_targets(problems, single, file_arg):
    if file_arg:
        return [Path(file_arg)]
    if single:
        return [runner.PRACTICE / single.filename]
    return [runner.PRACTICE / p.filename for p in problems]


def _mtimes(paths):
    out = {}
    for p in paths:
        try:
            out[p] = p.stat().st_mtime_ns
        except OSError:
            out[p] = None
    return out


def cmd_watch(problems, single, args, prog) -> int:
    paths = _watch_targets(problems, single, args.file)
    limit = time.monotonic() + args.watch_minutes * 60
    last = None
    try:
        while time.monotonic() < limit:
            now = _mtimes(paths)
            if now != last:
                if last is not None:
                    _print("\n" + "-" * 60)
                changed = [p for p in paths if last is None or now[p] != last.get(p)]
                if single:
                    grade_one(single, args, prog)
                else:
                    # grade the problem that changed with full feedback, the rest as lines
                    targets = [p for p in problems if runner.PRACTICE / p.filename in changed]
                    grade_all(problems, args, prog)
                    if len(targets) == 1 and last is not None:
                        _print()
                        grade_one(targets[0], args, prog)
                _print("\n" + _("Watching {n} file(s) for changes (Ctrl-C to stop)...").format(n=len(paths)))
                last = now
            time.sleep(args.poll)
        _print(_("Stopped watching after {minutes} minutes.").format(minutes=f"{args.watch_minutes:g}"))
    except KeyboardInterrupt:
        _print("\n" + _("Stopped watching."))
    return 0


def _emit_json(data, args):
    text = json.dumps(data, indent=2)
    _print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")


def _file_in(practice):
    """The file to grade for a problem: in ``practice`` when given, else None (the judge's
    default, practice/)."""
    return lambda p: None if practice is None else Path(practice) / p.filename


def grade_one(problem, args, prog, practice=None) -> int:
    r = runner.grade(problem, args.file or _file_in(practice)(problem), args.seed)
    if args.json:
        _emit_json(report.to_json([r], prog, r.seed), args)
    else:
        _print(report.details(r, prog, hints_shown(problem)))
    return 0 if r.passed else 1


def grade_all(problems, args, prog, practice=None) -> int:
    seed = args.seed if args.seed is not None else seeds.draw()
    cb = None if args.json else (lambda r: _print(report.status_line(r)))
    note = report.isolation_note(runner.default_isolation())
    if note and not args.json:
        _print(note)   # once for the overview (the browser: no time limit)
    results = grade_many(problems, _file_in(practice), seed, on_result=cb)
    if args.json:
        _emit_json(report.to_json(results, prog, seed), args)
    else:
        _print()
        _print(report.summary(results, prog))
    if not (args.json or args.strict):
        return 0  # a progress report, not a test: see the exit codes above
    # problems this machine cannot run (missing torch/triton) are reported, not failed
    graded = [r for r in results if r.status is not ProblemStatus.UNAVAILABLE]
    return 0 if graded and all(r.passed for r in graded) else 1


def sandbox_note() -> None:
    """One line on stderr where attempts cannot run in the OS sandbox (grader/jail.py)."""
    from . import jail
    if runner.default_isolation() is not Isolation.PROCESS:
        return
    print(_("note: no OS sandbox here ({why}): your code runs in its own process behind "
            "the judge's Python-level guard -- fine for your own code; a teacher grading others' "
            "needs bubblewrap (docs/teaching.md).").format(why=jail.probe()), file=sys.stderr, flush=True)


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The command line's options; the help is in the current language (grader/lang.py)."""
    ap = argparse.ArgumentParser(prog=prog, description=_("Grade the MLA course's practice problems."),
                                 epilog=_("Examples: `%(prog)s`, `%(prog)s 4`, `%(prog)s choose_path --hint`, "
                                          "`%(prog)s 8 --file my_answer.py`"))
    ap.add_argument("problem", nargs="?", help=_("a problem number or slug (default: all)"))
    ap.add_argument("--file", help=_("grade this file as the named problem (exit code 0 iff it passes)"))
    ap.add_argument("--strict", action="store_true",
                    help=_("with the overview: exit code 1 unless every problem passes"))
    ap.add_argument("--hint", action="store_true", help=_("reveal the next hint for the problem"))
    ap.add_argument("--seed", type=_seed_arg, help=_("seed for the hidden cases (a failure prints the one to reuse)"))
    ap.add_argument("--json", action="store_true", help=_("print results.json (Exercism v3 + Gradescope score)"))
    ap.add_argument("--output", metavar="PATH",
                    help=_("with --json: also write the JSON to PATH (e.g. practice/results.json)"))
    ap.add_argument("--watch", action="store_true", help=_("re-grade whenever the file(s) change"))
    ap.add_argument("--watch-minutes", type=float, default=120.0, help=argparse.SUPPRESS)
    ap.add_argument("--poll", type=float, default=0.5, help=argparse.SUPPRESS)
    ap.add_argument("--solutions", action="store_true",
                    help=_("course check: solutions/ pass and practice/ stubs are 'not started'"))
    ap.add_argument("--list", action="store_true", help=_("list the problems"))
    ap.add_argument("--statement", action="store_true", help=_("print the problem's statement"))
    ap.add_argument("--lang", metavar="LANG",
                    help=_("zh (Simplified Chinese) or en; default: practice/.judge_lang, then "
                           "LANGUAGE/LC_ALL/LC_MESSAGES/LANG, then English"))
    return ap


# argparse's own words ("usage:", "options", its errors) come from the stdlib through the
# module-level name argparse._; while the judge parses, that name looks in the judge's
# catalogue first. These are the ones the catalogue carries (a test checks argparse still
# has each of them); argparse's rarer words stay English.
ARGPARSE_WORDS = (N_("usage: "), N_("positional arguments"), N_("options"),
                  N_("show this help message and exit"), N_("%(prog)s: error: %(message)s\n"),
                  N_("unrecognized arguments: %s"), N_("argument %(argument_name)s: %(message)s"),
                  N_("expected one argument"), N_("invalid %(type)s value: %(value)r"))


def lang_option(argv) -> str | None:
    """--lang's value, read before the parser exists (its help is in that language)."""
    for k, a in enumerate(argv):
        if a == "--lang" and k + 1 < len(argv):
            return argv[k + 1]
        if a.startswith("--lang="):
            return a.split("=", 1)[1]
    return None


def parse(argv, prog: str) -> argparse.Namespace:
    """Choose the language (--lang, then the setting file, then the environment), then
    parse, with argparse's own words in it too; one line on stderr for an unknown one."""
    argv = list(sys.argv[1:] if argv is None else argv)
    lang.use(lang_option(argv), remember=True, folder=hints.folder())
    if lang.note():
        print(lang.note(), file=sys.stderr)
    own = argparse._
    wanted = set(ARGPARSE_WORDS)
    argparse._ = lambda m: _(m) if m in wanted else own(m)
    try:
        return build_parser(prog).parse_args(argv)
    finally:
        argparse._ = own


def main(argv=None, prog: str | None = None, practice=None, args=None) -> int:
    """The command line; ``practice``: the folder of the learner's files (default
    practice/; the browser passes its drive's); ``args``: argv already parsed (the browser)."""
    prog = prog or PROG
    args = args if args is not None else parse(argv, prog)
    errors: list = []
    problems = runner.discover(errors)
    for e in errors:
        print(_("warning: problem spec {module} failed to load ({message}); "
                "it is skipped -- please report this.").format(module=e.module, message=e.message),
              file=sys.stderr)
    if not problems:
        print(_("error: no problem specs found in grader/problems/."), file=sys.stderr)
        return 2
    single = None
    if args.problem is None and args.file:
        args.problem = Path(args.file).stem  # pNN_slug.py names its problem
    if args.problem is not None:
        try:
            single = runner.find(args.problem, problems)
        except KeyError as e:
            if args.file:
                print(_("error: cannot tell which problem {file} is; name it: "
                        "`{prog} 4 --file {file}`.").format(file=args.file, prog=report.command(prog)), file=sys.stderr)
            else:
                print(_("error: {why}").format(why=lang.say(e.args[0])), file=sys.stderr)
            return 2
    if args.file and not Path(args.file).is_file():
        print(_("error: no such file: {file}").format(file=args.file), file=sys.stderr)
        return 2
    if args.list:
        for p in problems:
            print(f"{p.number:>2} {p.slug:<20} {texts.title(p)}   [{texts.chapter(p)}]")
        return 0
    if args.statement:
        for p in [single] if single else problems:
            where = _("(file: practice/{file}; chapter: {chapter}; check: {command})").format(
                file=p.filename, chapter=texts.chapter(p), command=f"{report.command(prog)} {p.number}")
            print(f"{texts.statement(p)}\n\n{where}\n")
        return 0
    if not args.hint:
        sandbox_note()
    if args.solutions:
        seed = args.seed if args.seed is not None else seeds.draw()
        return cmd_solutions([single] if single else problems, seed, prog)
    if args.hint:
        if single is None:
            print(_("which problem? `{prog} 4 --hint` gives the next hint for problem 4 "
                    "(problems: {problems}).").format(prog=report.command(prog), problems=", ".join(
                        f"{p.number} {p.slug}" for p in problems)), file=sys.stderr)
            return 2
        print(reveal_hint(single))
        return 0
    if args.watch:
        return cmd_watch(problems, single, args, prog)
    if single is not None:
        return grade_one(single, args, prog, practice)
    return grade_all(problems, args, prog, practice)


if __name__ == "__main__":
    sys.exit(main())
