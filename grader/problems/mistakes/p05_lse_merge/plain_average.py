"""mistake: plain average
message: You averaged the parts' outputs; weight part i by exp(lse_i - lse) so parts with
  more softmax mass count more (and empty parts count zero).
"""
import numpy as np


def lse_merge(outs, lses):
    return np.mean(outs, axis=0), np.logaddexp.reduce(lses, axis=0)   # slip: plain mean
