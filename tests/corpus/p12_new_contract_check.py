"""Check the p12 attempts against the NEW triton_inner_loop cases until the judge has them.

    .venv/bin/python tests/corpus/p12_new_contract_check.py            (about 2 minutes on a CPU)

The new hidden cases vary h_q in {16, 32, 64}, d_k in {32, 64, 128} and d_v in {16, 32,
64}, so a kernel or launcher that hard-codes 16/64/32 must fail. This is NOT the judge:
it runs each attempt in its own process (Triton's interpreter without a GPU) on a few
such shapes (d_v <= d_k; one with a scale other than 1/sqrt(d_k)) plus one case with
scores in the hundreds (an unstable float32 softmax overflows), compares with mlacourse.attention per sequence (|got - exp| <= 1e-2 + 1e-2 *
|exp| as the spec; -inf must be -inf), and shows that every right_ attempt passes and
every wrong_ one fails. Attempts marked `reason: uses_reference` or computing outside
the kernel are listed, not graded: their numbers are right by construction.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NOT_NUMERIC = ("reason: uses_reference", "computes the answer with torch", "recomputed in numpy")

CHILD = r'''
import importlib.util, json, math, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from mlacourse.attention import attention

spec = importlib.util.spec_from_file_location("attempt", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
rng = np.random.default_rng(12)
shapes = [(32, 128, 16, 3.0, 1.0), (64, 64, 64, 3.0, 1.0), (16, 32, 32, 3.0, 0.5), (16, 32, 16, 60.0, 1.0)]
for h, d_k, d_v, q_std, scale_factor in shapes:
    lens = [5, 16, 33, 0]
    kv = rng.standard_normal((4, 48, d_k))
    for b, n in enumerate(lens):
        kv[b, n:] = np.nan
    q = rng.standard_normal((4, h, d_k)) * q_std
    scale = scale_factor / math.sqrt(d_k)
    try:
        out, lse = (np.asarray(x, dtype=np.float64) for x in mod.triton_inner_loop(q, kv, np.array(lens, np.int32), d_v, scale))
    except Exception as e:
        print(json.dumps(f"h={h} d_k={d_k} d_v={d_v}: raised {type(e).__name__}")); sys.exit()
    for b, n in enumerate(lens):
        eo, el = attention(q[b], kv[b, :n], kv[b, :n, :d_v], scale)
        for name, e, g in (("out", eo, out[b] if out.shape[1:] == eo.shape else None),
                           ("lse", el, lse[b] if lse.shape[1:] == el.shape else None)):
            if g is None:
                print(json.dumps(f"h={h} d_k={d_k} d_v={d_v}: {name} has the wrong shape")); sys.exit()
            fin = np.isfinite(e)
            if (not np.array_equal(np.isfinite(g), fin) or not np.array_equal(g[~fin], e[~fin])
                    or not np.all(np.abs(g[fin] - e[fin]) <= 1e-2 + 1e-2 * np.abs(e[fin]))):
                print(json.dumps(f"h={h} d_k={d_k} d_v={d_v}{' large scores' if q_std > 10 else ''}: {name} of sequence {b} (length {n}) differs")); sys.exit()
print(json.dumps(""))
'''


def run(path: Path) -> str:
    env = dict(os.environ, TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, str(path), str(ROOT)], capture_output=True,
                           text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return "timed out"
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith('"')]
    if p.returncode != 0 or not lines:
        return f"process ended with code {p.returncode}"
    return json.loads(lines[-1])


def main() -> int:
    bad = 0
    for path in sorted((HERE / "p12_triton_inner_loop").glob("*.py")):
        text = path.read_text()
        if any(k in text for k in NOT_NUMERIC):
            print(f"--  {path.name:38} skipped: its numbers are right by construction")
            continue
        why = run(path)
        ok = (why == "") == path.name.startswith("right_")
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {path.name:38} {'passes' if not why else 'fails: ' + why}", flush=True)
    print(f"{bad} attempt(s) not graded as their name says")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
