"""mistake: least recently used over every unlocked node
message: Your list evicts a node that still has a child in the cache. Only leaves can go: a
  parent becomes a candidate once its last child is evicted (otherwise the child's tokens
  hang on a missing prefix).
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
