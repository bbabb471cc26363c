#!/usr/bin/env python3
"""The same text model in PyTorch beside a C run (docs/text.md#the-same-model-in-pytorch).

Given a run folder of ./train on token shards (its config.conf and its step-0 checkpoint), this
trains bench/torch_ref.py's model of exactly attnscope's architecture (pre-LN blocks, softmax
attention with qkv and projection biases, GELU-tanh MLP, learned positions, LM head tied to wte)
from the same initial weights, on the same batches in the same order, with the same optimizer
and schedule, and evaluates the same validation windows:

- batches: the loader of data/dataset.c re-implemented: windows of seq_len + 1 tokens at stride
  seq_len within each shard (shards in sorted order), permuted each epoch e by Fisher-Yates driven
  by xoshiro256** seeded with seed_mix(seed, e) (core/rng.c), batch_size windows a step;
- validation: the first eval_batches * batch_size windows of the validation shards, in order;
- AdamW (beta1, beta2, eps; weight decay lr * weight_decay on the 2-D tensors only, as the C
  model's decay flags), the global gradient norm clipped to grad_clip, lr_at's warm-up and cosine;
- timing: each step from fetching its batch to the optimizer's update, as ./train's ms_per_step;
  evaluations are not timed. --variant compile times its first (compiling) step too.

Writes one JSON line per logged step to --out: {"impl", "seed", "step", "train_s" (seconds of
training so far), "loss" (the step's training loss)} every --log-every steps and
{"impl", "seed", "step", "train_s", "val_loss"} at every eval_every step and the last.
Usage: build/torch-venv/bin/python bench/torch_text.py RUN_DIR --variant eager --out LOG.jsonl
"""
import argparse
import glob
import json
import math
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ref import gpt  # noqa: E402

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


def seed_mix(a, b):
    x = a ^ ((b * 0x9E3779B97F4A7C15) & M64)
    x, _ = splitmix64(x)
    return splitmix64(x)[1]


class Rng:  # xoshiro256**, seeded as rng_seed
    def __init__(self, seed):
        x, self.s = seed, []
        for _ in range(4):
            x, z = splitmix64(x)
            self.s.append(z)

    def u64(self):
        s = self.s
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M64  # noqa: E731
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        limit = M64 - M64 % n
        while True:
            x = self.u64()
            if x < limit:
                return x % n


def permutation(n, seed):
    v = list(range(n))
    r = Rng(seed)
    for i in range(n - 1, 0, -1):
        j = r.below(i + 1)
        v[i], v[j] = v[j], v[i]
    return v


def read_config(path):
    """config.conf as ./train writes it: key = value, # comments, values bare or quoted."""
    cfg = {}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        v = v.strip()
        if v.startswith('"'):
            v = v[1 : v.index('"', 1)]
        else:
            v = v.split("#", 1)[0].strip()
        cfg[k.strip()] = v
    return cfg


def read_shards(pattern, np):
    out = []
    for path in sorted(glob.glob(pattern)):
        header = np.fromfile(path, dtype=np.int32, count=256)
        dtype = np.uint16 if header[0] == 20240520 else np.uint32
        out.append(np.fromfile(path, dtype=dtype, offset=1024, count=int(header[2])).astype(np.int64))
    if not out:
        sys.exit("torch_text: no shards match %s" % pattern)
    return out


class Windows:
    """Window i of the shards: tokens [w*T, w*T + T] of its shard (data/dataset.c)."""

    def __init__(self, shards, T, np):
        self.np, self.T, self.shards, self.first = np, T, shards, [0]
        for s in shards:
            self.first.append(self.first[-1] + ((len(s) - 1) // T if len(s) >= T + 1 else 0))
        self.n = self.first[-1]

    def get(self, rows):
        np, T = self.np, self.T
        x = np.empty((len(rows), T + 1), dtype=np.int64)
        for r, i in enumerate(rows):
            j = max(k for k in range(len(self.shards)) if self.first[k] <= i)
            w = (i - self.first[j]) * T
            x[r] = self.shards[j][w : w + T + 1]
        return x


def lr_at(step, total, warmup, lr, min_lr):  # trainer/optim.c, cosine
    if step < warmup:
        return lr * (step + 1) / warmup
    if total <= warmup:
        return lr
    p = min(1.0, (step - warmup) / (total - warmup))
    return min_lr + 0.5 * (1 + math.cos(math.pi * p)) * (lr - min_lr)


def load_checkpoint(path, np):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or name.startswith("optim."):
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=np.float32).reshape(t["shape"]).copy()
    return out


def torch_name(c_name):
    return (c_name.replace("wte", "wte.weight", 1) if c_name == "wte" else
            c_name.replace("wpe", "wpe.weight", 1) if c_name == "wpe" else
            c_name.replace(".attn.qkv.", ".qkv.").replace(".attn.proj.", ".proj.")
            .replace(".mlp.fc.", ".fc.").replace(".mlp.proj.", ".fc_proj."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run", help="a ./train run folder on shards, with its step-0 checkpoint")
    ap.add_argument("--variant", default="eager", choices=("eager", "compile"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--stop-at", type=int, default=0, help="stop after this many steps (a check; the schedule is the run's)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import numpy as np
    import torch

    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    c = read_config(os.path.join(a.run, "config.conf"))
    T, B, steps = int(c["seq_len"]), int(c["batch_size"]), int(c["steps"])
    L, H, C = int(c["n_layer"]), int(c["n_head"]), int(c["d_model"])
    if c["mixer"] != "softmax" or c["mlp"] != "true" or c["pos_emb"] != "learned" or c["lr_schedule"] != "cosine":
        sys.exit("torch_text: the reference is the softmax model with MLP, learned positions and the cosine schedule")
    seed, eval_every, eval_batches = int(c["seed"]), int(c["eval_every"]), int(c["eval_batches"])
    train = Windows(read_shards(c["train_data"], np), T, np)
    val = Windows(read_shards(c["val_data"], np), T, np)
    w = load_checkpoint(os.path.join(a.run, "ckpt_00000000.safetensors"), np)
    V = w["wte"].shape[0]
    model = gpt(torch, V, T, C, H, L)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, arr in w.items():
            params.pop(torch_name(name)).copy_(torch.from_numpy(arr))
    if params:
        sys.exit("torch_text: the checkpoint lacks %s" % ", ".join(params))
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() != 2]
    lr, min_lr, warmup = float(c["lr"]), float(c["min_lr"]), int(c["warmup_steps"])
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(c["weight_decay"])},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(float(c["beta1"]), float(c["beta2"])), eps=float(c["eps"]))
    clip = float(c["grad_clip"])
    fwd = torch.compile(model) if a.variant == "compile" else model
    n_val = min(eval_batches * B, val.n) if eval_batches > 0 else val.n
    val_x = torch.from_numpy(val.get(range(n_val)))
    log = open(a.out, "w")

    def record(**r):
        log.write(json.dumps(dict(impl="torch-" + a.variant, seed=seed, **r)) + "\n")
        log.flush()

    def evaluate(step, train_s):
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for i in range(0, n_val, B):
                x = val_x[i : i + B]
                total += model(x[:, :-1].contiguous(), x[:, 1:].contiguous()).item() * x[:, 1:].numel()
                count += x[:, 1:].numel()
        model.train()
        record(step=step, train_s=round(train_s, 4), val_loss=round(total / count, 6))

    perm, perm_epoch, train_s = permutation(train.n, seed_mix(seed, 0)), 0, 0.0  # as the C loader's first batch
    evaluate(0, 0.0)
    for step in range(a.stop_at or steps):
        t0 = time.perf_counter()
        rows = []
        for b in range(B):
            s = step * B + b
            epoch = s // train.n
            if epoch != perm_epoch:
                perm, perm_epoch = permutation(train.n, seed_mix(seed, epoch)), epoch
            rows.append(perm[s % train.n])
        x = torch.from_numpy(train.get(rows))
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, warmup, lr, min_lr)
        opt.zero_grad(set_to_none=True)
        loss = fwd(x[:, :-1].contiguous(), x[:, 1:].contiguous())
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        loss_v = loss.item()
        train_s += time.perf_counter() - t0
        done = step + 1
        if done % a.log_every == 0 or done == steps:
            record(step=done, train_s=round(train_s, 4), loss=round(loss_v, 6))
        if (eval_every and done % eval_every == 0) or done == steps:
            evaluate(done, train_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
