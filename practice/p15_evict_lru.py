"""Problem 15 - evict_lru: evict from a radix-tree prefix cache: unlocked leaves, least recently used first.

Chapter: notebooks/07_inference_engine.ipynb
Check your answer: python practice/judge.py 15     (hints: python practice/judge.py 15 --hint)
The whole statement: python practice/judge.py 15 --statement

The chapter's section 7.7 explains what this builds.
"""


def evict_lru(parent, tokens, last_access, in_use, n_needed):
    """The nodes to evict, in eviction order, to free at least n_needed tokens.

    parent       [n] int64: each node's parent, -1 for a child of the root
    tokens       [n] int64 >= 1: tokens each node holds
    last_access  [n] int64: when each node was last used (larger = more recent; a node's
                 last_access is never smaller than its children's)
    in_use       [n] bool: on a running request's path (locked; its parent is locked too)
    n_needed     int >= 0: tokens to free

    Repeatedly evict, among the nodes not in use whose children have all been evicted,
    the one with the smallest last_access (a tie: the smaller node id), until the
    evicted nodes hold at least n_needed tokens or no candidate is left.
    Returns the list of evicted node ids in eviction order. The inputs are not changed,
    and are always valid.
    """
    # TODO(problem 15): count children, keep the candidates ordered by (last_access, node), pop.
    raise NotImplementedError("problem 15 (evict_lru) is not written yet")
