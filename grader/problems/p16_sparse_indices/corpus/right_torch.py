"""expect: pass
slip: none -- the same arithmetic in torch, returning an int64 tensor.
"""
import torch


def sparse_indices(topk_pos, block_table, page_block_size):
    pos = torch.as_tensor(topk_pos).long().clone()
    table = torch.as_tensor(block_table).long()
    valid = pos >= 0
    pos[~valid] = 0
    seq = torch.arange(pos.shape[0])[:, None, None].expand_as(pos)
    pages = table[seq, pos // page_block_size]
    return torch.where(valid, pages * page_block_size + pos % page_block_size, torch.full_like(pos, -1))
