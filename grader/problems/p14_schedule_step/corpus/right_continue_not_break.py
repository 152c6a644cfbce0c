"""expect: pass
slip: none -- skips with continue where the model answer breaks (the conditions never become true again).
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    budget = token_budget
    plan = []
    for rid, pending, decoding in running:
        if decoding and budget:
            plan.append((rid, 1))
            budget -= 1
    for rid, pending, decoding in running:
        if not decoding and budget:
            take = pending if pending < budget else budget
            plan.append((rid, take))
            budget -= take
    holders = len(running)
    for rid, pending in waiting:
        if budget == 0:
            continue
        if max_running is not None and holders >= max_running:
            continue
        take = min(pending, budget)
        plan.append((rid, take))
        budget -= take
        holders += 1
    return plan
