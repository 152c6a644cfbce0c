"""expect: pass
slip: none -- plain loops for the scores and sorted() with the key (-score, position).
"""
import numpy as np


def lightning_indexer(q_idx, weights, k_idx, topk):
    s_q, n_heads, _ = np.shape(q_idx)
    s_k = len(k_idx)
    out = []
    for t in range(s_q):
        visible = s_k - s_q + 1 + t
        score = {}
        for s in range(visible):
            total = 0.0
            for j in range(n_heads):
                dot = float(np.dot(q_idx[t][j], k_idx[s]))
                total += weights[t][j] * max(dot, 0.0)
            score[s] = total
        chosen = sorted(score, key=lambda s: (-score[s], s))[:topk]
        out.append(chosen + [-1] * (topk - len(chosen)))
    return np.array(out, dtype=np.int64).reshape(s_q, topk)
