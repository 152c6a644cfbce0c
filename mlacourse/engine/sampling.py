"""What a request needs to finish: how its next token is picked, and when it stops.

  SamplingParams  temperature 0 (greedy) or temperature/top-p sampling with a per-request
                  seed; stop token ids; stop strings
  sample          logits [vocab] -> one token id (draws one uniform number from the
                  request's own generator when it samples)
  stop_reason     why a request's generation ends after its latest token, or None
  detokenize      token ids -> text, for the tiny model's 96-token vocabulary

Batch invariance: each request owns a numpy Generator seeded from its SamplingParams and
draws exactly one number per sampled token. Which other requests share a step, when the
request is preempted (its generated tokens are kept; only its cache is recomputed) --
none of that touches its generator, so a request samples the same tokens alone or in any
batch, as long as its logits are the same (the engine's invariant: to ~1e-15 in float64;
a draw that falls within 1e-15 of a boundary between two tokens could still flip, with a
probability of that order).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The tiny model's 96 token ids read as text: ids 0..94 are the printable ASCII characters
# ' ' .. '~', id 95 is a newline. A made-up tokenizer, enough for stop strings to mean
# something; it is not the tokenizer of any real model.
TEXT_ALPHABET = "".join(chr(c) for c in range(32, 127)) + "\n"


@dataclass(frozen=True)
class SamplingParams:
    """How one request picks its tokens and when it stops.

    temperature     0 picks the largest logit (greedy); > 0 samples softmax(logits / T)
    top_p           sample only from the most likely tokens whose probabilities add up to
                    at least top_p (nucleus sampling); 1.0 keeps every token
    seed            the request's own random seed: required when temperature > 0
    stop_token_ids  generation ends when one of these ids is generated (it is kept)
    stop            generation ends when the generated text contains one of these strings;
                    the request's text is cut before it (its tokens are all kept)"""
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop_token_ids: tuple = ()
    stop: tuple = ()

    def __post_init__(self):
        if not (self.temperature >= 0 and np.isfinite(self.temperature)):
            raise ValueError(f"temperature must be a finite number >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if self.temperature > 0 and self.seed is None:
            raise ValueError("sampling with temperature > 0 needs a seed: the request's own generator "
                             "is what keeps its tokens the same in any batch")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
        if any(not isinstance(s, str) or not s for s in stop):
            raise ValueError(f"stop strings must be non-empty strings, got {self.stop!r}")
        object.__setattr__(self, "stop", stop)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def generator(self) -> np.random.Generator | None:
        """The request's own generator (None for greedy decoding, which draws nothing)."""
        return None if self.greedy else np.random.default_rng(self.seed)


GREEDY = SamplingParams()


def top_p_probabilities(logits, temperature: float, top_p: float):
    """(token ids, probabilities) of the nucleus: softmax(logits / T) sorted from the most
    likely down (ties by token id), cut after the first position where the running sum
    reaches top_p, renormalised. logits [vocab] float64."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    p = np.exp(z - z.max())  # stable: the largest term is exp(0) = 1
    p /= p.sum()
    order = np.argsort(-p, kind="stable")  # [vocab] most likely first
    cum = np.cumsum(p[order])
    keep = int(np.searchsorted(cum, top_p * (1 - 1e-12))) + 1  # smallest prefix reaching top_p
    kept = p[order[:keep]]
    return order[:keep], kept / kept.sum()


def sample(logits, params: SamplingParams, rng: np.random.Generator | None) -> int:
    """One token id from logits [vocab]: the argmax when greedy, else one draw u ~ U[0, 1)
    from the request's generator, mapped through the nucleus' cumulative probabilities."""
    if params.greedy:
        return int(np.argmax(logits))
    if rng is None:
        raise ValueError("sampling needs the request's generator (SamplingParams.generator())")
    ids, probs = top_p_probabilities(logits, params.temperature, params.top_p)
    u = rng.random()
    i = min(int(np.searchsorted(np.cumsum(probs), u, side="right")), len(ids) - 1)
    return int(ids[i])


def detokenize(tokens) -> str:
    """Token ids -> text through TEXT_ALPHABET (the tiny model's made-up tokenizer)."""
    try:
        return "".join(TEXT_ALPHABET[int(t)] for t in tokens)
    except IndexError:
        raise ValueError(f"detokenize knows ids 0..{len(TEXT_ALPHABET) - 1}, got {list(tokens)[:8]}") from None


def stop_reason(generated, params: SamplingParams, max_new_tokens: int) -> str | None:
    """Why generation ends after the latest of `generated` tokens: "stop_token" (it is one
    of params.stop_token_ids), "stop_string" (the text now contains a stop string),
    "length" (max_new_tokens reached), or None to go on. Checked in that order."""
    if not generated:
        return None
    if generated[-1] in params.stop_token_ids:
        return "stop_token"
    if params.stop:
        text = detokenize(generated)
        if any(s in text for s in params.stop):
            return "stop_string"
    if len(generated) >= max_new_tokens:
        return "length"
    return None


def output_text(generated, params: SamplingParams) -> str:
    """The request's text: its tokens detokenized, cut before the first stop string."""
    text = detokenize(generated)
    cut = [text.find(s) for s in params.stop if s in text]
    return text[:min(cut)] if cut else text
