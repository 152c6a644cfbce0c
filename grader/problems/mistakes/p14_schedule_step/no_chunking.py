"""mistake: no chunking
message: A prefill that does not fit whole must still run: give it min(n_pending, budget
  left) tokens now (chunked prefill) and the rest next step.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left, plan = token_budget, []
    for rid, n, is_decode in running:
        if is_decode and left > 0:
            plan.append((rid, 1))
            left -= 1
    for rid, n, is_decode in running:
        if not is_decode and n <= left:
            plan.append((rid, n))
            left -= n
    holding = len(running)
    for rid, n in waiting:
        if left == 0 or (max_running is not None and holding >= max_running):
            break
        if n <= left:
            plan.append((rid, n))
            left -= n
            holding += 1
    return plan
