#!/usr/bin/env python3
"""The bench's PyTorch reference: the same GPT-2-shaped softmax model and training step as
attnscope's (pre-LN blocks, causal multi-head softmax attention with qkv/proj biases, GELU-tanh
MLP, learned positions, LM head tied to wte, cross-entropy, AdamW), timed the same way (best step
after warm-up), with the same thread count and denormals flushed.

The reference is PyTorch 2.x from the Python package index in a virtual environment of the
bench's own (make torch-venv: build/torch-venv), which build/bench finds; --python names another
interpreter. By hand:
  build/torch-venv/bin/python bench/torch_ref.py --V 4096 --T 256 --B 16 --C 256 --L 4 --H 4 \
      --variant eager
Variants (--variant, one a process): eager (fp32), compile (torch.compile of the model, fp32;
the first steps' compile time is excluded from the timing and printed), bf16 (eager under
torch.autocast("cpu", torch.bfloat16)), compile-bf16. --targets K puts a loss at K random
positions per sequence (MQAR); the LM head still runs at every position, as Zoology's PyTorch
code does, unless --labelled-only, which gathers the labelled rows first and runs the head there
only (as attnscope does).
Prints a line "settings: ..." (torch version, threads, denormal flushing, compile mode, the CPU
capability, oneDNN and MKL) and then one line "tokens_per_s=... ms_best=... ms_median=..." or
"skipped: ..." when torch is missing.
"""
import argparse
import math
import sys
import time

VARIANTS = ("eager", "compile", "bf16", "compile-bf16")


def settings_line(torch, a, flushed):
    caps = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "?"
    cfg = torch.__config__.show()
    blas = "?"
    for part in cfg.replace(",", "\n").splitlines():
        if "BLAS_INFO=" in part:
            blas = part.split("BLAS_INFO=")[1].strip()
    par = torch.__config__.parallel_info()
    backend = "?"
    for line in par.splitlines():
        if line.startswith("ATen parallel backend:"):
            backend = line.split(":", 1)[1].strip()
    return ("settings: torch=%s python=%s variant=%s head=%s threads=%d interop_threads=%d parallel=%s "
            "flush_denormal=%s compile_mode=%s cpu_capability=%s mkldnn=%s mkldnn_enabled=%s mkl=%s blas=%s"
            % (torch.__version__, sys.executable, a.variant, "labelled-only" if a.labelled_only else "all-positions",
               torch.get_num_threads(), torch.get_num_interop_threads(), backend, flushed,
               a.compile_mode if "compile" in a.variant else "none", caps,
               torch.backends.mkldnn.is_available(), torch.backends.mkldnn.enabled,
               torch.backends.mkl.is_available(), blas))


def gpt(torch, V, T, C, H, L, mlp=True, pos_emb=True, ln_eps=1e-5):
    """attnscope's softmax model as a torch.nn.Module: forward(idx, targets, rows=None) is the mean
    cross-entropy over the positions with a target (rows: the flattened positions to keep, or
    None). Parameter names map one to one onto attnscope's checkpoint tensors (text_side.py)."""
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C, eps=ln_eps)
            self.qkv = nn.Linear(C, 3 * C)
            self.proj = nn.Linear(C, C)
            if mlp:
                self.ln_2 = nn.LayerNorm(C, eps=ln_eps)
                self.fc = nn.Linear(C, 4 * C)
                self.fc_proj = nn.Linear(4 * C, C)

        def attn(self, x):
            B_, T_, _ = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q = q.view(B_, T_, H, C // H).transpose(1, 2)
            k = k.view(B_, T_, H, C // H).transpose(1, 2)
            v = v.view(B_, T_, H, C // H).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).contiguous().view(B_, T_, C))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            if mlp:
                x = x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))
            return x

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C) if pos_emb else None
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C, eps=ln_eps)

        def forward(self, idx, targets, rows=None):
            x = self.wte(idx)
            if self.wpe is not None:
                x = x + self.wpe(torch.arange(idx.shape[1]))
            for b in self.h:
                x = b(x)
            x = self.ln_f(x).view(-1, C)
            t = targets.view(-1)
            if rows is not None:  # --labelled-only: the labelled rows, gathered (a fixed count per batch)
                x, t = x[rows], t[rows]
            logits = x @ self.wte.weight.t()
            return F.cross_entropy(logits.float(), t, ignore_index=-100)

    return GPT()


def init_gpt2(torch, model, L):
    """GPT-2's initialisation (as attnscope's): N(0, 0.02) weights, output projections
    N(0, 0.02 / sqrt(2 L)), zero biases, unit LayerNorms."""
    nn = torch.nn
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
        elif "ln_" in name:
            nn.init.ones_(p)
        else:
            std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
            nn.init.normal_(p, 0.0, std)


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
    ap.add_argument("--variant", default="eager", choices=VARIANTS)
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode (default, max-autotune-no-cudagraphs, ...)")
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
        print("skipped: %s has no torch (make torch-venv, or --python PATH)" % sys.executable)
        return 0

    if not hasattr(F, "scaled_dot_product_attention"):
        print("skipped: torch %s is older than 2.0 (make torch-venv installs 2.x)" % torch.__version__)
        return 0
    torch.set_num_threads(a.threads)
    flushed = torch.set_flush_denormal(True)
    torch.manual_seed(0)
    C, H, T, V = a.C, a.H, a.T, a.V
    bf16 = a.variant.endswith("bf16")
    compiled = a.variant.startswith("compile")
    print(settings_line(torch, a, flushed), flush=True)

    model = gpt(torch, V, T, C, H, a.L, a.mlp, a.pos_emb)
    init_gpt2(torch, model, a.L)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=a.weight_decay)
    fwd = torch.compile(model, mode=a.compile_mode) if compiled else model
    g = torch.Generator().manual_seed(1234)

    def batch():
        idx = torch.randint(0, V, (a.B, T), generator=g)
        tgt = torch.randint(0, V, (a.B, T), generator=g)
        rows = None
        if a.targets >= 0:
            keep = torch.zeros(a.B, T, dtype=torch.bool)
            for b in range(a.B):
                keep[b, torch.randperm(T, generator=g)[: a.targets]] = True
            tgt = torch.where(keep, tgt, torch.full_like(tgt, -100))
            if a.labelled_only:
                rows = keep.view(-1).nonzero().view(-1)
        return idx, tgt, rows  # with a loss at every position the head runs everywhere either way

    def step(idx, tgt, rows):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = fwd(idx, tgt, rows)
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        return loss

    compile_s = 0.0
    if compiled:  # the first step compiles forward and backward: timed apart, before the warm-up
        t0 = time.perf_counter()
        step(*batch())
        compile_s = time.perf_counter() - t0
    times = []
    for it in range(a.warmup + a.steps):
        idx, tgt, rows = batch()
        t0 = time.perf_counter()
        loss = step(idx, tgt, rows)
        t1 = time.perf_counter()
        if it >= a.warmup:
            times.append(t1 - t0)
    times.sort()
    best, med = times[0], times[len(times) // 2]
    print("tokens_per_s=%.1f ms_best=%.3f ms_median=%.3f loss=%.4f torch=%s threads=%d variant=%s head=%s "
          "compile_s=%.1f"
          % (a.B * T / best, best * 1e3, med * 1e3, loss.item(), torch.__version__, torch.get_num_threads(),
             a.variant, "labelled" if a.labelled_only else "all", compile_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
