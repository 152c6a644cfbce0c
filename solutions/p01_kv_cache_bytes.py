"""Problem 1 -- model answer: KV-cache bytes for MHA, GQA, MQA and MLA."""


def kv_cache_bytes(kind, n_tokens, n_layers, bytes_per_element=2, n_heads=128, head_dim=128,
                   n_kv_heads=8, d_latent=512, d_rope=64):
    if kind == "mha":
        per_token_layer = 2 * n_heads * head_dim      # K and V for every head
    elif kind == "gqa":
        per_token_layer = 2 * n_kv_heads * head_dim   # K and V for each shared KV head
    elif kind == "mqa":
        per_token_layer = 2 * head_dim                # one K and one V for all heads
    elif kind == "mla":
        per_token_layer = d_latent + d_rope           # latent + shared rotary key
    else:
        raise ValueError(f"unknown kind {kind!r}; use 'mha', 'gqa', 'mqa' or 'mla'")
    return per_token_layer * n_tokens * n_layers * bytes_per_element
