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


def shared_prompt_stream(n_requests: int, system_len: int, vocab: int, follower_arrival: int = 1, seed: int = 0,
                         question_len=(4, 20), max_new: int = 24, spacing: int = 0):
    """system_prompt_stream with the followers' arrival as a knob: q0 arrives at step 0,
    follower i at step follower_arrival + i * spacing. Late followers find q0 finished."""
    stream = system_prompt_stream(n_requests, system_len, vocab, seed=seed, question_len=question_len,
                                  max_new=max_new)
    return [(rid, p, m, 0 if i == 0 else follower_arrival + (i - 1) * spacing)
            for i, (rid, p, m, _) in enumerate(stream)]


def conversations(n_conversations: int, n_turns: int, vocab: int, seed: int = 0, system_len: int = 2000,
                  first_user=(50, 300), later_user=(8, 64), answer=(8, 32), every: int = 3):
    """Multi-turn conversations behind one shared system prompt (an agent calling tools:
    short tool results appended to a long context, short answers). Conversation j starts
    at step j * every. Returns [(cid, start_step, [(user_tokens, max_new_tokens), ...])]."""
    rng = np.random.default_rng(seed)
    system = [int(t) for t in rng.integers(0, vocab, system_len)]
    out = []
    for j in range(n_conversations):
        turns = []
        for k in range(n_turns):
            lo, hi = first_user if k == 0 else later_user
            user = [int(t) for t in rng.integers(0, vocab, int(rng.integers(lo, hi)))]
            turns.append(((system if k == 0 else []) + user, int(rng.integers(*answer))))
        out.append((f"c{j}", j * every, turns))
    return out


def run_conversations(engine, convs, think_steps: int = 2, max_steps: int = 1_000_000) -> dict:
    """Drive multi-turn conversations: turn k+1 of a conversation arrives think_steps after
    turn k finishes, its prompt = turn k's prompt + turn k's generated tokens + the new user
    tokens (so a prefix cache can serve everything before the new user tokens). Returns
    {request id: (conversation id, turn)}; request ids are "<cid>.t<k>"."""
    state, ids = {}, {}
    for cid, start, turns in convs:
        rid = engine.add_request(turns[0][0], turns[0][1], arrival=start, rid=f"{cid}.t0")
        state[rid], ids[rid] = (cid, 0, turns), (cid, 0)
    for _ in range(max_steps):
        rec = engine.step()
        if rec is None:
            return ids
        for rid in rec.finished:
            cid, k, turns = state.pop(rid)
            if k + 1 < len(turns):
                r = engine.requests[rid]
                user, max_new = turns[k + 1]
                nxt = engine.add_request(r.prompt + r.generated + user, max_new, arrival=rec.step + 1 + think_steps,
                                         rid=f"{cid}.t{k + 1}")
                state[nxt], ids[nxt] = (cid, k + 1, turns), (cid, k + 1)
    raise RuntimeError(f"not finished after {max_steps} steps")
