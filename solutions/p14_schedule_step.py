"""Problem 14 - schedule_step: model answer."""


def schedule_step(running, waiting, token_budget, max_running=None):
    left, plan = token_budget, []
    for rid, _, is_decode in running:                 # 1. decodes, 1 token each
        if is_decode and left > 0:
            plan.append((rid, 1))
            left -= 1
    for rid, n_pending, is_decode in running:         # 2. prefills under way, chunked
        if not is_decode and left > 0:
            n = min(n_pending, left)
            plan.append((rid, n))
            left -= n
    holding = len(running)                            # 3. admissions, first come first served
    for rid, n_pending in waiting:
        if left == 0 or (max_running is not None and holding >= max_running):
            break
        n = min(n_pending, left)
        plan.append((rid, n))
        left -= n
        holding += 1
    return plan
