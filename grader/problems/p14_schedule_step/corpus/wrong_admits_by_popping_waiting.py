"""expect: fail
slip: admits requests by popping them off the front of `waiting`, like a queue, which empties the caller's list.
reason: mutated_input
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    left = token_budget
    plan = [(rid, 1) for rid, _, dec in running if dec][:left]
    left -= len(plan)
    for rid, n, dec in running:
        if not dec and left:
            plan.append((rid, min(n, left)))
            left -= min(n, left)
    holding = len(running)
    while waiting and left and (max_running is None or holding < max_running):
        rid, n = waiting.pop(0)
        plan.append((rid, min(n, left)))
        left -= min(n, left)
        holding += 1
    return plan
