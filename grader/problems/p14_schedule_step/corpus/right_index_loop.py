"""expect: pass
slip: none -- index loops and an explicit admissions counter.
"""


def schedule_step(running, waiting, token_budget, max_running=None):
    out = []
    spent = 0
    i = 0
    while i < len(running) and spent < token_budget:
        if running[i][2]:
            out.append((running[i][0], 1))
            spent += 1
        i += 1
    for j in range(len(running)):
        rid, n, dec = running[j]
        if dec or spent == token_budget:
            continue
        give = min(n, token_budget - spent)
        out.append((rid, give))
        spent += give
    admitted = 0
    for rid, n in waiting:
        full = max_running is not None and len(running) + admitted >= max_running
        if full or spent == token_budget:
            break
        give = min(n, token_budget - spent)
        out.append((rid, give))
        spent += give
        admitted += 1
    return out
