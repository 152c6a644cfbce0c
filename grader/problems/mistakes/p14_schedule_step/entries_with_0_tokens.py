"""mistake: entries with 0 tokens
message: Your plan has entries with 0 tokens; once the budget is used up, stop adding
  requests.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left, plan = token_budget, []
    for rid, n, is_decode in running:
        if is_decode:
            plan.append((rid, min(1, left)))
            left -= min(1, left)
    for rid, n, is_decode in running:
        if not is_decode:
            plan.append((rid, min(n, left)))
            left -= min(n, left)
    holding = len(running)
    for rid, n in waiting:
        if max_running is not None and holding >= max_running:
            break
        plan.append((rid, min(n, left)))
        left -= min(n, left)
        holding += 1
    return plan
