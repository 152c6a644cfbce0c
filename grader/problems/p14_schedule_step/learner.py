"""A right answer to problem 14, written the way the learners whose slips are catalogued here
write it: the base that each named mistake (mistakes.diff) and each near-copy wrong
attempt (corpus/wrong.diff) changes by a few lines. grader/slips.py expands them.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left, plan = token_budget, []
    for rid, n, is_decode in running:
        if is_decode and left > 0:
            plan.append((rid, 1))
            left -= 1
    for rid, n, is_decode in running:
        if not is_decode and left > 0:
            k = min(n, left)
            plan.append((rid, k))
            left -= k
    holding = len(running)
    for rid, n in waiting:
        if left == 0 or (max_running is not None and holding >= max_running):
            break
        k = min(n, left)
        plan.append((rid, k))
        left -= k
        holding += 1
    return plan
