"""The course judge: problem specs (grader/problems/), a sandboxed runner, and the
command line behind `python practice/judge.py`. In a notebook:

    from grader import check
    check(4, attention_flops=attention_flops, choose_path=choose_path)
    check("choose_path", namespace=globals())
    check_file(4)         # grade practice/p04_choose_path.py as it is saved now
    statement(4)          # what problem 4 asks for
    set_language("zh")    # the judge in Simplified Chinese for this session ("en": English)
"""


def __getattr__(name):
    # lazy, so that `python practice/judge.py` can say "run setup.sh" before numpy is needed
    if name in ("check", "check_file", "statement"):
        from . import notebook
        return getattr(notebook, name)
    if name == "set_language":
        from . import lang
        return lambda code: lang.use(code, remember=True)
    raise AttributeError(f"module 'grader' has no attribute {name!r}")


__all__ = ["check", "check_file", "statement", "set_language"]
