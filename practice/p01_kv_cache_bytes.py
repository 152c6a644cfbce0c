"""Problem 1 - kv_cache_bytes: cache bytes for MHA/GQA/MQA/MLA.

Chapter: notebooks/01_kv_cache.ipynb
Check your answer: python practice/judge.py 1      (hints: python practice/judge.py 1 --hint)
The whole statement: python practice/judge.py 1 --statement

kind is "mha", "gqa", "mqa" or "mla". Return the bytes one sequence of n_tokens keeps
in the cache over all n_layers layers:
  mha  every head stores a key and a value of head_dim numbers
  gqa  only n_kv_heads key/value heads are stored
  mqa  one key/value head for all query heads
  mla  one latent of d_latent numbers + d_rope rotary key numbers per token, shared by all heads
Each kind ignores the arguments it does not use.
"""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    """Return the cache size in bytes (an int)."""
    # TODO(problem 1): numbers per token per layer for `kind`, times tokens, layers, bytes.
    raise NotImplementedError("kv_cache_bytes: count the cached bytes")
