"""mistake: max_running ignored
message: Stop admitting when the running requests plus those admitted reach max_running
  (when it is not None).
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
    for rid, n in waiting:
        if left == 0:
            break
        k = min(n, left)
        plan.append((rid, k))
        left -= k
    return plan
