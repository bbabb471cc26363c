#!/usr/bin/env bash
# How tests/compat/d341175/ was made: a half-finished sweep written by the programs of commit
# d341175 (before h3_head_dim's default went from 1 to 2 at d1754ad): point seed=1 finished,
# seed=2 stopped at step 2 of 4. tests/test_compat.c resumes it with today's ./train and ./sweep.
# Usage: tests/compat/make_d341175.sh OLD_CHECKOUT   (a worktree of d341175, built with make)
set -euo pipefail
old=$(cd "$1" && pwd)
out=$(cd "$(dirname "$0")" && pwd)/d341175
rm -rf "$out" && mkdir -p "$out" && cd "$out"
printf 'vocab_size = 16\nseq_len = 8\nmqar_kv_pairs = 2\nmqar_train_examples = 32\nmqar_test_examples = 8\n'`
      `'d_model = 4\nn_head = 1\nn_layer = 1\nmlp = false\nbatch_size = 8\nlr = 3e-3\neval_every = 2\n'`
      `'sparsity_every = 0\nsave_every = 2\nkeep_last = 1\nsteps = 4\nthreads = 1\n' > b.conf
printf 'base = b.conf\nseed = 1, 2\n' > s.sweep
"$old/train" b.conf seed=1 out_dir=checkpoints/s/seed=1 > /dev/null
"$old/train" b.conf seed=2 out_dir=checkpoints/s/seed=2 stop_at_step=2 > /dev/null
rm -f checkpoints/s/*/train.lock
