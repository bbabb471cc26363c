#!/usr/bin/env python3
"""TensorBoard's own reader against the run log (.ci/run; docs/outputs.md#tensorboard).

    python tests/tensorboard_check.py RUN_DIR

Loads RUN_DIR's event files with TensorBoard's EventAccumulator (every event kept: no reservoir
sampling) and checks that it returns exactly the scalars the run's metrics.jsonl and
sparsity.jsonl hold: the same tags, and for each tag the same steps in the same order with the
same value, bit for bit as float32. The mapping from records to tags is written here again, on
purpose, from the documentation rather than from eval/tensorboard.c:

    train     train/loss, train/acc, train/lr, train/grad_norm, train/tok_per_s; in a run with
              the training-time terms also train/focus_penalty, train/answer_supervision,
              train/S_recall, train/answer_ce
    eval      val/loss, val/acc, val/acc_kv<K>_L<L>; with "split":"test" (the test set, read
              once at the end) test/loss, test/acc, test/acc_kv<K>_L<L>
    sparsity  sparsity/L<l>_H<h>/S_recall, sparsity/L<l>_H<h>/answer_share, .../S,
              .../eff_tokens, .../eff_tokens_recall
              (ans_window_share when the record has it, else ans_share); with "split":"test"
              sparsity_test/L<l>_H<h>/...

A record with "options" (another measurement than the run's own) and a null or absent field give
no scalar. Exit 0 when everything matches, 1 with the differences otherwise.
"""
import json
import math
import os
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator


def f32(x):
    """x rounded to float32, as the event file stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def records(path):
    """The run log's records of a file: complete lines that parse as objects with a step."""
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # a line cut by a kill is not a record
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and "step" in r:
                yield r


def expected_scalars(run_dir):
    """{tag: [(step, float32 value), ...]} in log order."""
    out = {}

    def add(tag, step, v):
        if isinstance(v, (int, float)) and math.isfinite(v):
            out.setdefault(tag, []).append((step, f32(float(v))))

    for r in records(os.path.join(run_dir, "metrics.jsonl")):
        if r.get("options"):
            continue
        if r.get("type") == "train":
            for k in ("loss", "acc", "lr", "grad_norm", "tok_per_s", "focus_penalty",
                      "answer_supervision", "S_recall", "answer_ce"):
                add("train/" + k, r["step"], r.get(k))
        elif r.get("type") == "eval":
            split = "test" if r.get("split") == "test" else "val"
            add(split + "/loss", r["step"], r.get("loss"))
            add(split + "/acc", r["step"], r.get("acc"))
            for k, v in r.items():  # the cells' accuracies (acc_lo, acc_hi: an interval, not mirrored)
                if k.startswith("acc_kv"):
                    add(split + "/" + k, r["step"], v)
    for r in records(os.path.join(run_dir, "sparsity.jsonl")):
        if r.get("options") or r.get("type", "sparsity") != "sparsity" or "layer" not in r:
            continue
        group = "sparsity_test" if r.get("split") == "test" else "sparsity"
        head = "%s/L%d_H%d/" % (group, r["layer"], r["head"])
        add(head + "S_recall", r["step"], r.get("S_recall"))
        share = r.get("ans_window_share")
        add(head + "answer_share", r["step"], share if share is not None else r.get("ans_share"))
        for k in ("S", "eff_tokens", "eff_tokens_recall"):
            add(head + k, r["step"], r.get(k))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tests/tensorboard_check.py RUN_DIR")
    run_dir = sys.argv[1]
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    got = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    want = expected_scalars(run_dir)
    problems = []
    for tag in sorted(set(want) | set(got)):
        if tag not in got:
            problems.append("%s: in the run log, not in TensorBoard" % tag)
        elif tag not in want:
            problems.append("%s: in TensorBoard, not in the run log" % tag)
        elif got[tag] != want[tag]:
            g, w = got[tag], want[tag]
            i = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
            problems.append("%s: %d points vs %d in the run log; first difference at #%d: TensorBoard %s, run log %s"
                            % (tag, len(g), len(w), i, g[i] if i < len(g) else "none", w[i] if i < len(w) else "none"))
    n_files = len([f for f in os.listdir(run_dir) if "tfevents" in f])
    if problems or not want:
        print("tensorboard_check: %s: %s" % (run_dir, "; ".join(problems) or "the run log has no scalars"))
        sys.exit(1)
    n = sum(len(v) for v in want.values())
    steps = sorted({s for v in want.values() for s, _ in v})
    print("tensorboard_check: %s: TensorBoard's EventAccumulator read %d event file(s): %d tags, %d scalars at "
          "steps %d..%d, every one equal (float32, bit for bit) to metrics.jsonl and sparsity.jsonl"
          % (run_dir, n_files, len(want), n, steps[0], steps[-1]))


if __name__ == "__main__":
    main()
