"""Request streams for chapter 7's measurements (and its tests): seeded, so a cell and
a test that ask for the same stream get the same requests.

A stream is a list of (rid, prompt, max_new_tokens, arrival_step)."""
from __future__ import annotations

import numpy as np


def submit(engine, stream) -> None:
    for rid, prompt, max_new, arrival in stream:
        engine.add_request(prompt, max_new, arrival=arrival, rid=rid)


def system_prompt_stream(n_requests: int, system_len: int, vocab: int, seed: int = 0,
                         question_len=(4, 20), max_new: int = 24):
    """Many requests with one common system prompt: request q0 arrives at step 0 and the
    others at step 1 (when q0's prompt is cached and can be shared). The first token after
    the system prompt differs between requests, so exactly system_len tokens are shared."""
    if n_requests > vocab:
        raise ValueError(f"at most vocab={vocab} requests (their first question tokens differ)")
    rng = np.random.default_rng(seed)
    system = [int(t) for t in rng.integers(0, vocab, system_len)]
    stream = []
    for i in range(n_requests):
        question = [i] + [int(t) for t in rng.integers(0, vocab, int(rng.integers(*question_len)) - 1)]
        stream.append((f"q{i}", system + question, max_new, 0 if i == 0 else 1))
    return stream


def random_stream(n_requests: int, vocab: int, seed: int = 0, prompt_len=(5, 300), max_new=(1, 60),
                  arrival_span: int = 40):
    """Independent random prompts, lengths and arrival steps (no shared prefixes to speak of)."""
    rng = np.random.default_rng(seed)
    return [(f"r{i}", [int(t) for t in rng.integers(0, vocab, int(rng.integers(*prompt_len)))],
             int(rng.integers(*max_new)), int(rng.integers(0, arrival_span))) for i in range(n_requests)]


MIXES = {
    # (prompt length range, new tokens range): long documents, short answers / chat-like
    "prefill-heavy": ((1000, 8000), (10, 60)),
    "decode-heavy": ((50, 400), (300, 800)),
}


def mix_stream(kind: str, n_requests: int = 32, seed: int = 1, every: int = 4, vocab: int = 96):
    """A prefill-heavy or decode-heavy mix at V3-like lengths, one arrival every `every` steps."""
    if kind not in MIXES:
        raise ValueError(f"kind must be one of {sorted(MIXES)}, got {kind!r}")
    (p_lo, p_hi), (n_lo, n_hi) = MIXES[kind]
    rng = np.random.default_rng(seed)
    return [(f"{kind[0]}{i}", [int(t) for t in rng.integers(0, vocab, int(rng.integers(p_lo, p_hi)))],
             int(rng.integers(n_lo, n_hi)), i * every) for i in range(n_requests)]
