"""expect: fail
slip: writes each running prefill's remaining tokens back into `running` (as the engine will after the step), changing the caller's list.
reason: mutated_input
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left = token_budget
    plan = []
    for rid, n, is_decode in running:
        if is_decode and left > 0:
            plan.append((rid, 1))
            left -= 1
    for i, (rid, n, is_decode) in enumerate(running):
        if not is_decode and left > 0:
            k = min(n, left)
            plan.append((rid, k))
            left -= k
            if k < n:
                running[i] = (rid, n - k, False)      # the rest waits for the next step
    held = len(running)
    for rid, n in waiting:
        if left <= 0 or (max_running is not None and held >= max_running):
            break
        plan.append((rid, min(n, left)))
        left -= min(n, left)
        held += 1
    return plan
