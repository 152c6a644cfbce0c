"""expect: fail
slip: caps every prefill chunk at 128 tokens (a kernel-friendly chunk size), even when more budget is left.
"""

CHUNK = 128


def schedule_step(running, waiting, token_budget, max_running=None):
    plan, left = [], token_budget
    for rid, n, is_decode in running:
        if is_decode and left > 0:
            plan.append((rid, 1))
            left -= 1
    for rid, n, is_decode in running:
        if not is_decode and left > 0:
            take = min(n, left, CHUNK)
            plan.append((rid, take))
            left -= take
    holding = len(running)
    for rid, n in waiting:
        if left <= 0 or (max_running is not None and holding >= max_running):
            break
        take = min(n, left, CHUNK)
        plan.append((rid, take))
        left -= take
        holding += 1
    return plan
