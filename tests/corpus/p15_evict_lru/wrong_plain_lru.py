"""expect: fail
slip: sorts every unlocked node by last_access and takes them in that order, children or not.
mistake: least recently used over every unlocked node
"""


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    order = sorted((k for k in range(len(parent)) if not in_use[k]), key=lambda k: (last_access[k], k))
    out, freed = [], 0
    for k in order:
        if freed >= n_needed:
            break
        out.append(k)
        freed += int(tokens[k])
    return out
