"""mistake: one pass in arrival order
message: Your plan serves running requests in arrival order, so a prefill that arrived first
  takes budget before the decodes. Serve every decode first (1 token each), then the
  prefills under way.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left, plan = token_budget, []
    for rid, n, is_decode in running:
        if left > 0:
            k = 1 if is_decode else min(n, left)
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
