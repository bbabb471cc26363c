#!/usr/bin/env python3
"""docs/text_side_by_side.svg from bench/text_side_by_side.sh's logs: validation loss against
training seconds (batches and steps, evaluations excluded) for C, PyTorch eager and torch.compile,
one line per seed. Standard library only.
Usage: python3 bench/text_figure.py [LOGDIR] [OUT.svg]"""
import glob
import json
import math
import os
import sys

COLOURS = {"c": "#1f77b4", "torch-eager": "#d62728", "torch-compile": "#ff7f0e"}
NAMES = {"c": "C (./train)", "torch-eager": "PyTorch eager", "torch-compile": "torch.compile"}


def main():
    logdir = sys.argv[1] if len(sys.argv) > 1 else "bench/logs/text"
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/text_side_by_side.svg"
    lines = {}
    for path in sorted(glob.glob(os.path.join(logdir, "*.jsonl"))):
        for row in open(path):
            r = json.loads(row)
            if "val_loss" in r:
                lines.setdefault((r["impl"], r["seed"]), []).append((r["train_s"], r["val_loss"]))
    if not lines:
        sys.exit("%s: no logs" % logdir)
    W, H, left, right, top, bottom = 640, 400, 60, 170, 20, 50
    xmax = max(t for pts in lines.values() for t, _ in pts)
    ymin = min(v for pts in lines.values() for _, v in pts)
    ymin = math.floor(ymin * 10) / 10
    ymax = 3.0  # the start (5.5) squeezes the rest; the curves enter from above
    X = lambda t: left + (W - left - right) * t / xmax  # noqa: E731
    Y = lambda v: top + (H - top - bottom) * (ymax - min(v, ymax)) / (ymax - ymin)  # noqa: E731
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>']
    step = min(m * 10 ** k for k in range(-1, 6) for m in (1, 2, 5) if m * 10 ** k >= xmax / 8)
    t = 0.0
    while t <= xmax + 1e-9:
        s.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (X(t), top, X(t), H - bottom))
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (X(t), H - bottom + 16, t))
        t += step
    v = ymin
    while v <= ymax + 1e-9:
        s.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, Y(v), W - right, Y(v)))
        s.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (left - 6, Y(v) + 4, v))
        v += 0.2
    s.append('<text x="%d" y="%d" text-anchor="middle">training seconds (2 threads; evaluations excluded)</text>'
             % ((left + W - right) / 2, H - 12))
    s.append('<text x="16" y="%d" text-anchor="middle" transform="rotate(-90 16 %d)">validation loss (nats/byte)</text>'
             % ((top + H - bottom) / 2, (top + H - bottom) / 2))
    for (impl, seed), pts in sorted(lines.items()):
        pts.sort()
        d = " ".join("%.1f,%.1f" % (X(t), Y(v)) for t, v in pts)
        s.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s seed %d</title></polyline>'
                 % (COLOURS.get(impl, "black"), d, NAMES.get(impl, impl), seed))
    y = top + 10
    for impl in ("c", "torch-eager", "torch-compile"):
        if any(k[0] == impl for k in lines):
            s.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                     % (W - right + 10, y, W - right + 30, y, COLOURS[impl]))
            s.append('<text x="%d" y="%d">%s</text>' % (W - right + 36, y + 4, NAMES[impl]))
            y += 18
    s.append('<text x="%d" y="%d" fill="#555">one line a seed</text>' % (W - right + 10, y + 4))
    s.append("</svg>")
    open(out, "w").write("\n".join(s) + "\n")
    print("%s: %d lines" % (out, len(lines)))


if __name__ == "__main__":
    main()
