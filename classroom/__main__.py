"""The teacher's command line: ``python -m classroom COMMAND ...``

  release    build the student bundle (folder + zip): no solutions, no model answers
  grade      grade a folder of submissions: gradebook, results.json per student, summary
  gradescope build the Gradescope autograder zip (setup.sh + run_autograder)
  github     write the GitHub Classroom autograding workflow (.github/classroom/classroom.yml)
  slides     render every chapter as a reveal.js deck into slides/
  guide      regenerate the generated sections of docs/teaching.md from the specs

docs/teaching.md walks through a term with these commands.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

PROG = "python -m classroom"



def _seed_arg(text: str) -> int:
    from grader import seeds
    try:
        return seeds.parse(text, "--seed")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None

def _numbers(text: str) -> list[int]:
    """'1-11' / '1,3,12' / '2-4,8' -> sorted numbers."""
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return sorted(out)


def _points(text: str | None) -> dict:
    """'12=2,4=1.5' -> {12: 2.0, 4: 1.5}."""
    out = {}
    for part in (text or "").split(","):
        if part.strip():
            k, _, v = part.partition("=")
            out[int(k)] = float(v)
    return out


def _deadline(text: str | None):
    if not text:
        return None
    t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _roster(path: str | None):
    if not path:
        return None
    ids = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        cell = line.split(",")[0].strip()
        if cell and cell.lower() not in ("student", "id", "login", "username"):
            ids.append(cell)
    return ids


def cmd_release(a) -> int:
    from . import release
    try:
        r = release.build(Path(a.out), source="worktree" if a.from_worktree else "auto",
                          github_classroom=a.github_classroom, lang=a.lang)
    except release.ReleaseError as e:
        print(f"release refused: {e}", file=sys.stderr)
        return 1
    for w in r.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"student bundle from {r.source}: {len(r.files)} files")
    print(f"  folder: {r.folder}\n  zip:    {r.zip_path}")
    for name, where, why in r.allowed_hits:
        print(f"  note: {where} has the body of the model answer {name} -- allowed: {why}")
    print(f"  not included: {', '.join(r.left_out)} (and git history)")
    if a.lang != "en":
        print(f"  in Chinese: README.md (README.en.md beside it), the chapters in notebooks/zh/; "
              f"{release.JUDGE_LANG_FILE} makes the judge answer in {release.JUDGE_LANG[a.lang]}")
    if a.github_classroom:
        print("  included for GitHub Classroom: .github/workflows/classroom.yml (the autograding workflow)")
    return 0


def cmd_grade(a) -> int:
    from grader import runner

    from . import gradebook, shown
    from .grade import SandboxMissing, Settings, grade_class, resolve_seed, stub_hashes
    problems = runner.discover()
    if a.problems:
        wanted = set(_numbers(a.problems))
        problems = [p for p in problems if p.number in wanted]
    skipped = {}
    for p in list(problems):
        missing = runner.missing_requirements(p)
        if missing:
            skipped[p.number] = f"needs {', '.join(missing)}, not installed here"
            problems.remove(p)
            print(f"warning: problem {p.number} is not graded: it {skipped[p.number]}.", file=sys.stderr)
    try:
        seed, seed_from = resolve_seed(a.seed, a.seed_file, Path(a.out))
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    warnings: list = []
    stubs = stub_hashes(problems, warnings=warnings)   # the released stubs: the last commit's
    for w in warnings:
        print(f"warning: stubs: {w}", file=sys.stderr)
    from grader import seeds

    from . import submissions
    if seeds.weak(seed):
        print(f"warning: the seed ({seed_from}) is under 2**64: a class that sees hidden inputs could find it "
              "by trying every seed, and know the cases of every regrade. Draw one of 128 bits: "
              "python -c \"import secrets; print(secrets.randbits(128))\"", file=sys.stderr)
    try:
        times = submissions.teacher_times(Path(a.submitted_at)) if a.submitted_at else None
    except (OSError, ValueError) as e:
        print(f"error: --submitted-at: {shown.terminal(e)}", file=sys.stderr)
        return 2
    if a.deadline and times is None:
        print("note: --deadline without --submitted-at: `late` is \"unknown\" for everyone (nothing inside a "
              "submission is trusted for it; see docs/teaching.md, Collect)", file=sys.stderr)
    st = Settings(seed, seed_from, problems, skipped, _points(a.points), a.workers or os.cpu_count() or 1,
                  _deadline(a.deadline), a.hide_seed, not a.no_cache, _roster(a.roster),
                  isolation="process" if a.trust_submissions else "jail", stubs=stubs, times=times)
    if a.trust_submissions:
        print("warning: --trust-submissions: the files run as your user with only the judge's Python "
              "guard; use it for files you wrote yourself, never for a class.", file=sys.stderr)
    t0 = time.monotonic()
    try:
        res = grade_class(Path(a.submissions), Path(a.out), st, progress=not a.no_progress)
    except KeyboardInterrupt:
        return 130
    except SandboxMissing as e:
        print(f"grade refused: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:
        print(f"error: {shown.terminal(e)}", file=sys.stderr)
        return 2
    written = gradebook.write(res, Path(a.out))
    for name, why in written["failed"]:
        print(f"error: {Path(a.out) / name} could not be written ({shown.terminal(why)}); everything else was.",
              file=sys.stderr)
    took = time.monotonic() - t0
    for d in gradebook.summary_data(res)["problems"]:
        s = d["status"]
        top = (f"; most often: {shown.terminal(d['mistakes'][0][0])} ({d['mistakes'][0][2]})"
               if d["mistakes"] else "")
        print(f"  p{d['problem']:02d} {d['slug']:<20} passed {s['passed']:>3}, failed {s['failed']:>3}, "
              f"not started {s['not started']:>3}, missing {s['missing']:>3}{top}")
    _print_notebooks(res.students)
    shown_seed = "<hidden>" if a.hide_seed else seed
    print(f"graded {len(res.students)} students x {len(problems)} problems "
          f"({res.attempts} distinct attempts, {res.graded_now} graded now, the rest from the cache) "
          f"in {took:.1f} s with {st.workers} workers; seed {shown_seed} ({shown.terminal(seed_from)}).")
    print(f"  {Path(a.out) / 'gradebook.csv'}, verdicts.csv, results/, summary.md, summary.png, matching.md")
    if res.not_graded:
        print(f"warning: {res.not_graded} attempt(s) were NOT GRADED because the grading machinery failed "
              "(not the attempts: see verdicts.csv, reason 'infrastructure'); run the same command again "
              "to grade them.", file=sys.stderr)
        return 3
    return 1 if written["failed"] else 0


def _print_notebooks(students, shown: int = 40) -> None:
    """What happened to notebook hand-ins: every refusal is printed (it scores 0)."""
    from .notebooks import class_notebooks
    from .shown import terminal
    graded, refused = class_notebooks(students)
    if not graded and not refused:
        return
    print(f"  notebooks: {len(graded)} attempt(s) graded from notebooks, {len(refused)} NOT GRADED")
    for sid, n, where, why in refused[:shown]:
        print(f"  NOT GRADED: {terminal(sid)} problem {n}: the notebook {terminal(where)} could not be used: "
              f"{terminal(why)}")
    if len(refused) > shown:
        print(f"  ... and {len(refused) - shown} more notebooks not graded: see summary.md")


def cmd_gradescope(a) -> int:
    """The autograder zip, on the teacher's own seed: without one the command refuses (an
    invented seed would be a second secret, and a file holding it next to the student
    bundle in --out would be one copy away from the students)."""
    from .grade import SEED_ENV, resolve_seed
    from .platforms import build_gradescope
    if a.seed is None and not a.seed_file and not os.environ.get(SEED_ENV, "").strip():
        print("error: gradescope needs your secret seed, the one `grade` uses: --seed-file FILE (or --seed N, "
              f"or ${SEED_ENV}). Make one once, outside the course's folders:\n"
              '  python -c "import secrets; print(secrets.randbits(128))" > ~/mla-secret-seed.txt',
              file=sys.stderr)
        return 2
    out = Path(a.out).resolve()
    if a.seed_file and (out == Path(a.seed_file).resolve().parent or out in Path(a.seed_file).resolve().parents):
        print(f"error: the seed file {a.seed_file} is inside --out {a.out}, next to what students are given; "
              "keep it elsewhere (e.g. ~/mla-secret-seed.txt)", file=sys.stderr)
        return 2
    try:
        seed, seed_from = resolve_seed(a.seed, a.seed_file)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from grader import seeds
    if seeds.weak(seed):
        print(f"warning: the seed ({seed_from}) is under 2**64: students who see hidden inputs could find it "
              "by trying every seed. Draw one of 128 bits: python -c \"import secrets; print(secrets.randbits(128))\"",
              file=sys.stderr)
    warnings: list = []
    path, seed = build_gradescope(Path(a.out), seed, _points(a.points), with_torch=not a.without_torch,
                                  hide_seed=not a.show_seed, warnings=warnings)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"Gradescope autograder: {path} (seed from {seed_from}; it is written only into the zip's "
          "config.json). Upload the zip as the assignment's autograder, and to Gradescope only: it "
          "holds your seed.")
    return 0


def cmd_gradescope_run(a) -> int:
    import json

    from .platforms import NoIsolation, gradescope_run
    try:
        res = gradescope_run(Path(a.root))
    except NoIsolation as e:
        out = Path(a.root) / "results" / "results.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"score": 0.0, "tests": [], "output": (
            "The autograder could not isolate your code from the grader, so it did not run it "
            f"(not your code's fault: {e}). Please tell your teacher.")}, indent=2) + "\n")
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"score {res['score']:g} of {sum(t.get('max_score', 0) for t in res['tests']):g}")
    return 0


def cmd_github(a) -> int:
    from .platforms import WORKFLOW, workflow_text
    text = workflow_text(_points(a.points))
    if a.check:
        ok = WORKFLOW.is_file() and WORKFLOW.read_text() == text
        print(f"{WORKFLOW} is {'up to date' if ok else 'OUT OF DATE: run ' + PROG + ' github'}")
        return 0 if ok else 1
    WORKFLOW.parent.mkdir(parents=True, exist_ok=True)
    WORKFLOW.write_text(text)
    print(f"wrote {WORKFLOW}")
    return 0


def cmd_slides(a) -> int:
    from . import slides
    try:
        out = Path(a.out or ("slides" if a.lang == "en" else f"slides/{a.lang}"))
        paths = slides.build_all(out, execute=a.execute, cdn=a.cdn, assets=a.assets,
                                 chapters=a.chapters or None, log=print, lang=a.lang)
    except slides.AssetError as e:
        print(f"error: the decks' assets (reveal.js, require.js, jQuery, MathJax) could not be had: {e}.\n"
              "  They are downloaded once from the npm registry and cached in "
              f"{slides.CACHE}; on a machine without the network, copy that folder from one that has it "
              "and pass --assets FOLDER, or build decks that load them from CDNs when viewed: --cdn",
              file=sys.stderr)
        return 1
    print(f"{len(paths)} decks in {out}/ (open {out / 'index.html'})")
    return 0


def cmd_guide(a) -> int:
    from . import guide
    if a.check:
        stale = guide.stale()
        print("docs/teaching.md and docs/teaching.zh.md are up to date" if not stale else
              f"docs/teaching.md or docs/teaching.zh.md is OUT OF DATE ({', '.join(stale)}): run {PROG} guide")
        return 1 if stale else 0
    from i18n import docs
    for path in guide.write():
        print(f"wrote {path}")
    if not docs.have_po4a():
        print(f"note: {docs.INSTALL_HINT}: docs/teaching.zh.md got its generated sections only; "
              "the rest of it is rebuilt by `python -m i18n build docs` where po4a is", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description="Run the MLA course for a class.")
    sub = ap.add_subparsers(dest="command", required=True)

    r = sub.add_parser("release", help="build the student bundle (folder + zip), without model answers")
    r.add_argument("--out", default="dist", help="where the bundle goes (default dist/)")
    r.add_argument("--from-worktree", action="store_true",
                   help="copy the folder as it is, uncommitted edits included (default: the last commit)")
    r.add_argument("--github-classroom", action="store_true",
                   help="add .github/workflows/classroom.yml (the autograding workflow)")
    r.add_argument("--lang", choices=("en", "zh"), default="en",
                   help="the students' language: zh makes README.md the Chinese edition and Chinese "
                        "the judge's default (practice/.judge_lang); the bundle is then "
                        "mla-course-student-zh (default en)")
    r.set_defaults(func=cmd_release)

    g = sub.add_parser("grade", help="grade a folder of submissions (one sub-folder or zip per student)")
    g.add_argument("submissions")
    g.add_argument("--out", default="grades", help="where the gradebook goes (default grades/)")
    g.add_argument("--seed", type=_seed_arg, help="the hidden cases' seed (better: --seed-file)")
    g.add_argument("--seed-file", help="a file holding the teacher's secret seed")
    g.add_argument("--workers", type=int, help="attempts graded at once (default: the CPU count)")
    g.add_argument("--problems", help="which problems, e.g. 1-11 or 1,4,8 (default: all)")
    g.add_argument("--points", help="points per problem, e.g. 12=2,4=1.5 (default 1 each)")
    g.add_argument("--deadline", help="ISO 8601, e.g. 2025-03-01T23:59+01:00: adds a late column")
    g.add_argument("--submitted-at", help="your file of submission times (the LMS's export): one "
                                          "`id,ISO 8601 time` per line; the only source of `late`")
    g.add_argument("--roster", help="a file with one student id per line (or a CSV, ids first)")
    g.add_argument("--hide-seed", action="store_true",
                   help="leave the seed out of the per-student results (to reuse it later)")
    g.add_argument("--no-cache", action="store_true", help="grade everything again")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--trust-submissions", action="store_true",
                   help="grade without the OS sandbox (bubblewrap): only for files you wrote yourself")
    g.set_defaults(func=cmd_grade)

    s = sub.add_parser("gradescope", help="build the Gradescope autograder zip (needs your seed)")
    s.add_argument("--out", default="dist")
    s.add_argument("--seed", type=_seed_arg, help="the hidden cases' seed (better: --seed-file)")
    s.add_argument("--seed-file", help="a file holding the teacher's secret seed (required, or --seed, "
                                       "or $MLA_CLASS_SEED); not inside --out")
    s.add_argument("--points")
    s.add_argument("--without-torch", action="store_true", help="leave out problems that need torch/triton")
    s.add_argument("--show-seed", action="store_true", help="show the seed in students' feedback")
    s.set_defaults(func=cmd_gradescope)

    s = sub.add_parser("gradescope-run", help="(run by run_autograder inside Gradescope's container)")
    s.add_argument("--root", default="/autograder")
    s.set_defaults(func=cmd_gradescope_run)

    h = sub.add_parser("github", help="write the GitHub Classroom autograding workflow")
    h.add_argument("--points")
    h.add_argument("--check", action="store_true", help="exit 1 if the committed workflow is stale")
    h.set_defaults(func=cmd_github)

    d = sub.add_parser("slides", help="render the chapters as reveal.js decks")
    d.add_argument("chapters", nargs="*", help="chapter numbers (default: all)")
    d.add_argument("--out", help="where the decks go (default slides/, slides/zh/ for --lang zh)")
    d.add_argument("--lang", choices=("en", "zh"), default="en",
                   help="zh: the decks from the Chinese chapters (notebooks/zh/), same slides (default en)")
    d.add_argument("--no-execute", dest="execute", action="store_false",
                   help="do not run the chapters first (no plots or printed results)")
    d.add_argument("--assets", help="a folder holding the pinned npm tarballs of reveal.js, requirejs, jquery "
                                    "and mathjax (a copy of ~/.cache/mla-course/npm), for a machine "
                                    "without the network (default: that cache, else the npm registry)")
    d.add_argument("--cdn", action="store_true",
                   help="decks load those libraries from CDNs when viewed, instead of OUT/_assets")
    d.set_defaults(func=cmd_slides)

    t = sub.add_parser("guide", help="regenerate docs/teaching.md's generated sections")
    t.add_argument("--check", action="store_true", help="exit 1 if they are stale")
    t.set_defaults(func=cmd_guide)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
