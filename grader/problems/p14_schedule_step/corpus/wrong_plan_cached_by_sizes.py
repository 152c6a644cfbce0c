"""expect: fail
slip: caches plans by (number running, number waiting, budget, max_running), as if the same queue shapes always had the same requests.
"""
_plans = {}


def schedule_step(running, waiting, token_budget, max_running=None):
    key = (len(running), len(waiting), token_budget, max_running)
    if key in _plans:
        return list(_plans[key])
    left, plan = token_budget, []
    for rid, n, dec in running:
        if dec and left:
            plan.append((rid, 1))
            left -= 1
    for rid, n, dec in running:
        if not dec and left:
            plan.append((rid, min(n, left)))
            left -= plan[-1][1]
    holding = len(running)
    for rid, n in waiting:
        if not left or (max_running is not None and holding >= max_running):
            break
        plan.append((rid, min(n, left)))
        left -= plan[-1][1]
        holding += 1
    _plans[key] = list(plan)
    return plan
