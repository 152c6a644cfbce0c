"""expect: pass
slip: none -- one generator of candidates in priority order; returns lists of [rid, n].
"""


def _candidates(running, waiting):
    for rid, n, is_decode in running:
        if is_decode:
            yield rid, 1, False
    for rid, n, is_decode in running:
        if not is_decode:
            yield rid, n, False
    for rid, n in waiting:
        yield rid, n, True


def schedule_step(running, waiting, token_budget, max_running=None):
    left, holding, plan = token_budget, len(running), []
    for rid, n, new in _candidates(running, waiting):
        if left == 0:
            break
        if new:
            if max_running is not None and holding == max_running:
                break
            holding += 1
        plan.append([rid, min(n, left)])
        left -= min(n, left)
    return plan
