"""expect: pass
slip: none -- torch, with a stable descending sort.
"""
import torch


def lightning_indexer(q_idx, weights, k_idx, topk):
    q = torch.as_tensor(q_idx, dtype=torch.float64)
    w = torch.as_tensor(weights, dtype=torch.float64)
    k = torch.as_tensor(k_idx, dtype=torch.float64)
    scores = torch.einsum("th,ths->ts", w, torch.relu(torch.einsum("thd,sd->ths", q, k)))
    s_q, s_k = scores.shape
    out = torch.full((s_q, topk), -1, dtype=torch.int64)
    for t in range(s_q):
        n = s_k - s_q + 1 + t
        order = torch.sort(scores[t, :n], descending=True, stable=True).indices[:topk]
        out[t, :len(order)] = order
    return out
