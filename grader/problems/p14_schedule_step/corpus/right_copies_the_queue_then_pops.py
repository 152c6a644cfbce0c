"""expect: pass
slip: none -- pops admissions off a COPY of waiting (collections.deque), so the caller's lists stay as they were.
"""
from collections import deque


def schedule_step(running, waiting, token_budget, max_running=None):
    left, plan = token_budget, []
    decodes = [r for r in running if r[2]]
    prefills = [r for r in running if not r[2]]
    for rid, _, _ in decodes:
        if not left:
            break
        plan.append((rid, 1))
        left -= 1
    for rid, n, _ in prefills:
        if not left:
            break
        plan.append((rid, min(n, left)))
        left -= min(n, left)
    queue = deque(waiting)
    holding = len(running)
    while queue and left and (max_running is None or holding < max_running):
        rid, n = queue.popleft()
        plan.append((rid, min(n, left)))
        left -= min(n, left)
        holding += 1
    return plan
