"""mistake: removed from waiting while looping over it
message: Removing admitted requests from `waiting` while looping over it skips the request
  after each one removed -- and the caller still needs `waiting`. Leave the lists as they
  are.
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
    for req in waiting:
        rid, n = req
        if left == 0 or (max_running is not None and holding >= max_running):
            break
        k = min(n, left)
        plan.append((rid, k))
        left -= k
        holding += 1
        waiting.remove(req)
    return plan
