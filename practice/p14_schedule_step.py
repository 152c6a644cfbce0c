"""Problem 14 - schedule_step: one continuous-batching step: decodes, chunked prefills, admissions.

Chapter: notebooks/07_inference_engine.ipynb
Check your answer: python practice/judge.py 14     (hints: python practice/judge.py 14 --hint)
The whole statement: python practice/judge.py 14 --statement

The chapter's section 7.3 explains what this builds.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    """Which requests run this step, and with how many tokens each.

    running      [(rid, n_pending, is_decode)] in arrival order: requests holding pages;
                 a decode has n_pending == 1
    waiting      [(rid, n_pending)] in arrival order: requests without pages
    token_budget int >= 1: the most tokens this step may run
    max_running  the most requests that may hold pages (running included), or None

    Returns [(rid, n_tokens)], built in three passes, each in arrival order:
      1. every running decode gets 1 token, while budget is left;
      2. every running prefill gets min(n_pending, budget left), while budget is left;
      3. waiting requests are admitted with min(n_pending, budget left) while budget is
         left and fewer than max_running requests would hold pages; stop at the first
         that cannot be admitted.
    No entry has 0 tokens; the total is at most token_budget; running and waiting are
    not changed. The input is always valid.
    """
    # TODO(problem 14): one counter of budget left, then the three passes.
    raise NotImplementedError("problem 14 (schedule_step) is not written yet")
