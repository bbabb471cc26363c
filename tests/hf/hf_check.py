#!/usr/bin/env python3
"""Opens what `./export CKPT format=hf` writes in Hugging Face transformers and compares its logits
with this project's on the same tokens (docs/export.md#checking-it-in-transformers).

Run by hand, outside CI (it needs PyTorch and transformers, which `make test` does not):

    python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers numpy
    make && /tmp/hfvenv/bin/python tests/hf/hf_check.py             # two tiny runs it trains
    /tmp/hfvenv/bin/python tests/hf/hf_check.py checkpoints/my_run  # or runs / checkpoints you name

For each model: ./export format=hf into a scratch folder, GPT2LMHeadModel.from_pretrained on it
(strict: no missing or unexpected tensor but the tied lm_head), the same random token ids through
transformers and through build/hf_logits (this project's forward), and the largest absolute
difference of the logits over every position and vocabulary entry. Exit status 1 when any is
above --tol.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers
from transformers import GPT2LMHeadModel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The two tiny runs trained when no model is named: a softmax + MLP model, and an MQAR model
# without MLP (zero MLP weights in the folder). A few hundred steps so the weights are not the
# initial ones.
TINY = ("configs/quickstart.conf steps=200 d_model=32 n_head=2 n_layer=2 vocab_size=300 seq_len=32 "
        "mqar_kv_pairs=4 mqar_train_examples=2000 mqar_test_examples=64 batch_size=16 eval_every=0 "
        "sparsity_every=0 sample_every=0 save_every=1000 threads=2 resume=never")
RUNS = [("softmax_mlp", "mlp=true"), ("softmax_no_mlp", "mlp=false")]


def run(cmd):
    r = subprocess.run(cmd, cwd=ROOT, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{cmd}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def check(ckpt, scratch, name, n_seqs, tol, rng):
    folder = os.path.join(scratch, name + "_hf")
    print(run(f"./export {ckpt} format=hf out={folder}").strip())
    model, info = GPT2LMHeadModel.from_pretrained(folder, output_loading_info=True)
    model.eval()
    unexpected = info["unexpected_keys"]
    missing = [k for k in info["missing_keys"] if k != "lm_head.weight"]
    if missing or unexpected or info["mismatched_keys"]:
        sys.exit(f"{folder}: missing {missing}, unexpected {unexpected}, mismatched {info['mismatched_keys']}")
    cfg = model.config
    worst = 0.0
    for s in range(n_seqs):
        n = cfg.n_positions if s == 0 else rng.randint(1, cfg.n_positions)  # full length, then shorter
        tokens = [rng.randrange(cfg.vocab_size) for _ in range(n)]
        out = os.path.join(scratch, f"{name}_{s}.f32")
        run(f"build/hf_logits {ckpt} {out} " + " ".join(map(str, tokens)))
        ours = np.fromfile(out, dtype="<f4").reshape(n, cfg.vocab_size)
        with torch.no_grad():
            theirs = model(torch.tensor([tokens])).logits[0].numpy()
        diff = float(np.abs(theirs - ours).max())
        worst = max(worst, diff)
        print(f"  {n:3d} tokens: max |logit difference| = {diff:.3e} (logits up to {np.abs(ours).max():.2f})")
    ok = worst <= tol
    print(f"{name}: L={cfg.n_layer} H={cfg.n_head} C={cfg.n_embd} V={cfg.vocab_size} n_positions={cfg.n_positions}: "
          f"max |logit difference| {worst:.3e} over {n_seqs} sequences: {'ok' if ok else 'ABOVE'} (tol {tol:g})")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="run folders or checkpoints (default: train two tiny runs)")
    ap.add_argument("--seqs", type=int, default=4, help="random token sequences per model")
    ap.add_argument("--tol", type=float, default=1e-4, help="largest absolute logit difference allowed")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    run("make -j2 export build/hf_logits train > /dev/null")
    rng = random.Random(a.seed)
    ok = True
    with tempfile.TemporaryDirectory() as scratch:
        models = [(os.path.abspath(m), os.path.basename(os.path.normpath(m))) for m in a.models]
        if not models:
            for name, extra in RUNS:
                run_dir = os.path.join(scratch, name)
                run(f"./train {TINY} {extra} out_dir={run_dir}")
                models.append((run_dir, name))
        for path, name in models:
            ok &= check(path, scratch, name, a.seqs, a.tol, rng)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
