"""mistake: shortest job first
message: Waiting requests are admitted in arrival order (first come, first served), not
  smallest first.
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
    for rid, n in sorted(waiting, key=lambda w: w[1]):
        if left == 0 or (max_running is not None and holding >= max_running):
            break
        k = min(n, left)
        plan.append((rid, k))
        left -= k
        holding += 1
    return plan
