"""Continuous batching: which requests run in one step, and with how many tokens.

schedule_step is the policy on plain tuples (the engine calls it every step):
decodes first -- one token each, they are cheap and a user is waiting for each one --
then the prefills already under way, then new requests, each prefill cut to what is
left of the step's token budget (chunked prefill). The budget bounds the work of a
step, so a long prompt cannot stall everyone's next token for a whole prefill.

An optional per-request prefill cap (vLLM's long_prefill_token_threshold) cuts every
prefill chunk to at most that many tokens, so the oldest long prompt cannot take the
whole budget and later short prompts start in the same step.
"""
from __future__ import annotations


def schedule_step(running, waiting, token_budget: int, max_running: int | None = None,
                  prefill_cap: int | None = None):
    """One step's plan under a token budget.

    running  [(rid, n_pending, is_decode)] in arrival order: the requests that hold pages.
             n_pending >= 1 tokens are known but not yet cached; a decode has exactly 1.
    waiting  [(rid, n_pending)] in arrival order: requests without pages (new, or
             preempted and to be recomputed), with the tokens they would compute.
    Returns [(rid, n_tokens)]:
      1. each running decode gets 1 token, in arrival order, while budget is left;
      2. each running prefill gets min(n_pending, budget left), in arrival order;
      3. waiting requests are admitted in arrival order, each with
         min(n_pending, budget left), while budget is left and fewer than max_running
         requests (running ones included) would hold pages; admission stops at the first
         that cannot be admitted (first come, first served).
    prefill_cap: every prefill chunk (2 and 3) takes at most this many tokens (None: no cap).
    No request gets 0 tokens and the total never exceeds token_budget."""
    if token_budget < 1:
        raise ValueError(f"token_budget must be >= 1, got {token_budget}")
    if max_running is not None and max_running < 1:
        raise ValueError(f"max_running must be >= 1 or None, got {max_running}")
    if prefill_cap is not None and prefill_cap < 1:
        raise ValueError(f"prefill_cap must be >= 1 or None, got {prefill_cap}")
    cap = token_budget if prefill_cap is None else prefill_cap
    for rid, n, is_decode in running:
        if n < 1 or (is_decode and n != 1):
            raise ValueError(f"running request {rid!r}: n_pending={n} with is_decode={is_decode}")
    for rid, n in waiting:
        if n < 1:
            raise ValueError(f"waiting request {rid!r} has n_pending={n}; it needs at least 1")
    left, plan = token_budget, []
    for rid, _, is_decode in running:
        if is_decode and left > 0:
            plan.append((rid, 1))
            left -= 1
    for rid, n, is_decode in running:
        if not is_decode and left > 0:
            plan.append((rid, min(n, left, cap)))
            left -= min(n, left, cap)
    holding = len(running)
    for rid, n in waiting:
        if left == 0 or (max_running is not None and holding >= max_running):
            break
        plan.append((rid, min(n, left, cap)))
        left -= min(n, left, cap)
        holding += 1
    return plan
