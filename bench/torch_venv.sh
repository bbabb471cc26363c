#!/usr/bin/env bash
# make torch-venv: PyTorch 2.x from the Python package index in a virtual environment of the
# bench's own (default build/torch-venv, git-ignored), which build/bench and bench/scaling.sh find.
# Only make bench's PyTorch columns use it: the build, make test and CI never do.
# It asks PyTorch's CPU-only wheel index first (about 200 MB); where that host cannot be reached it
# installs the package index's Linux wheel, which pulls the CUDA libraries as well (about 5.4 GB
# installed) and runs on the CPU all the same (docs/performance.md#pytorch-2x-as-the-reference).
# Usage: bench/torch_venv.sh [DIR]   (PYTHON=... picks the interpreter the venv is made from)
set -euo pipefail
dir=${1:-build/torch-venv}
py=${PYTHON:-python3}
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c 'import torch, numpy' 2>/dev/null; then
    echo "torch-venv: $dir has torch $("$dir/bin/python" -c 'import torch; print(torch.__version__)')"
    exit 0
fi
"$py" -m venv "$dir"
"$dir/bin/pip" install --quiet --upgrade pip || true
if "$dir/bin/pip" install --timeout 20 --retries 1 torch numpy \
    --index-url https://download.pytorch.org/whl/cpu; then
    echo "torch-venv: the CPU-only wheel"
else
    echo "torch-venv: the CPU-only index could not be reached; the package index's wheel (with CUDA libraries)"
    "$dir/bin/pip" install torch numpy
fi
"$dir/bin/python" -c 'import torch; print("torch-venv: torch", torch.__version__, "in", torch.__file__)'
du -sh "$dir"
