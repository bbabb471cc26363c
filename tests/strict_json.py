#!/usr/bin/env python3
"""Reads every JSON text and safetensors header under the folders given as a strict reader does
(UTF-8 without replacement, then json.loads; safetensors: the 8-byte length, the header). Prints
one line per file that fails and exits 1; else 'N files valid'. Used by tests/test_writers.c."""
import json, os, struct, sys

bad = n = 0
for root in sys.argv[1:]:
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if name.endswith(".safetensors"):
                    with open(path, "rb") as f:
                        (hlen,) = struct.unpack("<Q", f.read(8))
                        json.loads(f.read(hlen).decode("utf-8", "strict"))
                elif name.endswith(".jsonl"):
                    for line in open(path, "rb").read().decode("utf-8", "strict").splitlines():
                        json.loads(line)
                elif name.endswith(".json"):
                    json.loads(open(path, "rb").read().decode("utf-8", "strict"))
                else:
                    continue
                n += 1
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                print(f"{path}: {e}")
                bad += 1
print(f"{n} files valid" if not bad else f"{bad} files invalid")
sys.exit(1 if bad else 0)
