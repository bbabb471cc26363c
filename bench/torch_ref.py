#!/usr/bin/env python3
"""The bench's PyTorch reference: the same GPT-2-shaped softmax model and training step as
attnscope's (pre-LN blocks, causal multi-head softmax attention with qkv/proj biases, GELU-tanh
MLP, learned positions, LM head tied to wte, cross-entropy, AdamW), timed the same way (best step
after warm-up), with the same thread count and denormals flushed.

build/bench runs it for every softmax row (make bench); by hand:
  /usr/bin/python3 bench/torch_ref.py --V 4096 --T 256 --B 16 --C 256 --L 4 --H 4 --mlp 1
Prints one line "tokens_per_s=... ms_best=... ms_median=..." or "skipped: ..." when torch is
missing. --targets K puts a loss at K random positions per sequence (MQAR); the head still runs at
every position, as Zoology's PyTorch code does, unless --labelled-only.
"""
import argparse
import math
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--V", type=int, required=True)
    ap.add_argument("--T", type=int, required=True)
    ap.add_argument("--B", type=int, required=True)
    ap.add_argument("--C", type=int, required=True)
    ap.add_argument("--L", type=int, required=True)
    ap.add_argument("--H", type=int, required=True)
    ap.add_argument("--mlp", type=int, default=1)
    ap.add_argument("--pos-emb", type=int, default=1)
    ap.add_argument("--targets", type=int, default=-1, help="labelled positions per sequence (-1: all)")
    ap.add_argument("--labelled-only", action="store_true", help="run the LM head only where there is a loss")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--clip", type=float, default=0.0)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError:
        print("skipped: %s has no torch (apt-get install python3-torch)" % sys.executable)
        return 0

    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    C, H, T, V = a.C, a.H, a.T, a.V

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * C)
            self.proj = nn.Linear(C, C)
            if a.mlp:
                self.ln_2 = nn.LayerNorm(C)
                self.fc = nn.Linear(C, 4 * C)
                self.fc_proj = nn.Linear(4 * C, C)
            self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def attn(self, x):
            B_, T_, _ = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q = q.view(B_, T_, H, C // H).transpose(1, 2)
            k = k.view(B_, T_, H, C // H).transpose(1, 2)
            v = v.view(B_, T_, H, C // H).transpose(1, 2)
            if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
                att = att.masked_fill(~self.mask[:T_, :T_], float("-inf"))
                y = F.softmax(att, dim=-1) @ v
            return self.proj(y.transpose(1, 2).contiguous().view(B_, T_, C))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            if a.mlp:
                x = x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))
            return x

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C) if a.pos_emb else None
            self.h = nn.ModuleList([Block() for _ in range(a.L)])
            self.ln_f = nn.LayerNorm(C)

        def forward(self, idx, targets):
            x = self.wte(idx)
            if self.wpe is not None:
                x = x + self.wpe(torch.arange(idx.shape[1]))
            for b in self.h:
                x = b(x)
            x = self.ln_f(x).view(-1, C)
            t = targets.view(-1)
            if a.labelled_only:
                keep = t >= 0
                x, t = x[keep], t[keep]
            logits = x @ self.wte.weight.t()
            return F.cross_entropy(logits, t, ignore_index=-100)

    model = GPT()
    # GPT-2's initialisation (as attnscope's): N(0, 0.02) weights, output projections
    # N(0, 0.02 / sqrt(2 L)), zero biases, unit LayerNorms.
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
        elif "ln_" in name:
            nn.init.ones_(p)
        else:
            std = 0.02 / math.sqrt(2 * a.L) if name.endswith("proj.weight") else 0.02
            nn.init.normal_(p, 0.0, std)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=a.weight_decay)
    g = torch.Generator().manual_seed(1234)

    def batch():
        idx = torch.randint(0, V, (a.B, T), generator=g)
        tgt = torch.randint(0, V, (a.B, T), generator=g)
        if a.targets >= 0:
            keep = torch.zeros(a.B, T, dtype=torch.bool)
            for b in range(a.B):
                keep[b, torch.randperm(T, generator=g)[: a.targets]] = True
            tgt = torch.where(keep, tgt, torch.full_like(tgt, -100))
        return idx, tgt

    times = []
    for it in range(a.warmup + a.steps):
        idx, tgt = batch()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(idx, tgt)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        t1 = time.perf_counter()
        if it >= a.warmup:
            times.append(t1 - t0)
    times.sort()
    best, med = times[0], times[len(times) // 2]
    print("tokens_per_s=%.1f ms_best=%.3f ms_median=%.3f loss=%.4f torch=%s threads=%d"
          % (a.B * T / best, best * 1e3, med * 1e3, loss.item(), torch.__version__, torch.get_num_threads()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
