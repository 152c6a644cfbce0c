"""expect: pass
slip: none -- orders the running requests decodes-first with a stable sort, then one loop.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left = token_budget
    plan = []
    for rid, n, is_decode in sorted(running, key=lambda r: not r[2]):  # stable: arrival order kept
        if left <= 0:
            break
        k = 1 if is_decode else min(n, left)
        plan.append((rid, k))
        left -= k
    room = float("inf") if max_running is None else max_running - len(running)
    for rid, n in waiting:
        if left <= 0 or room <= 0:
            break
        plan.append((rid, min(n, left)))
        left -= min(n, left)
        room -= 1
    return plan
