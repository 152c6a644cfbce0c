"""mistake: the whole budget instead of the budget left
message: Each prefill gets min(n_pending, budget LEFT), not min(n_pending, token_budget):
  your plan runs more tokens than the budget.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left, plan = token_budget, []
    for rid, n, is_decode in running:
        if is_decode and left > 0:
            plan.append((rid, 1))
            left -= 1
    for rid, n, is_decode in running:
        if not is_decode and left > 0:
            k = min(n, token_budget)
            plan.append((rid, k))
            left -= k
    holding = len(running)
    for rid, n in waiting:
        if left <= 0 or (max_running is not None and holding >= max_running):
            break
        k = min(n, token_budget)
        plan.append((rid, k))
        left -= k
        holding += 1
    return plan
