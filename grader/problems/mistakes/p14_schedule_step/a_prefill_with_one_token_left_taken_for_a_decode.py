"""mistake: a prefill with one token left taken for a decode
message: A request is decoding when is_decode is True, not when n_pending == 1: a prefill
  with one token left is served with the prefills, in its arrival order.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left = token_budget
    plan = []
    for rid, n, _ in running:
        if n == 1 and left > 0:
            plan.append((rid, 1))
            left -= 1
    for rid, n, _ in running:
        if n > 1 and left > 0:
            take = min(n, left)
            plan.append((rid, take))
            left -= take
    holding = len(running)
    for rid, n in waiting:
        if left <= 0 or (max_running is not None and holding >= max_running):
            break
        take = min(n, left)
        plan.append((rid, take))
        left -= take
        holding += 1
    return plan
