"""expect: fail
slip: puts the decodes first with running.sort(...), a stable sort that keeps arrival order -- but in place, on the caller's list.
reason: mutated_input
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    running.sort(key=lambda r: not r[2])       # decodes (True) first, arrival order kept
    left, plan = token_budget, []
    for rid, n, _ in running:
        if left == 0:
            break
        take = min(n, left)
        plan.append((rid, take))
        left -= take
    count = len(running)
    for rid, n in waiting:
        if left == 0 or (max_running is not None and count >= max_running):
            break
        plan.append((rid, min(n, left)))
        left -= min(n, left)
        count += 1
    return plan
