#!/usr/bin/env bash
# TensorBoard's own reader on the trainer's event files (.ci/run; docs/outputs.md#tensorboard):
# TensorBoard goes into a virtual environment of its own (build/tb-venv, made once), a tiny MQAR
# mixture with a short convolution and both training-time terms trains with tensorboard = true, is stopped at step 8, loses that
# checkpoint (as a kill before the save would) and resumes from step 5, redoing steps 6-8; then
# tests/tensorboard_check.py compares what TensorBoard's EventAccumulator returns with the run's
# metrics.jsonl and sparsity.jsonl: every tag, step and value. Run from the repository root after
# `make`; about a minute the first time (pip), seconds after.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/tb-venv
if [ ! -x $venv/bin/python ] || ! $venv/bin/python -c 'import tensorboard' 2>/dev/null; then
    rm -rf $venv
    python3 -m venv $venv
    $venv/bin/pip install -q --disable-pip-version-check tensorboard
fi
echo "TensorBoard $($venv/bin/python -c 'import tensorboard; print(tensorboard.__version__)') in $venv"
run=build/tb-run
rm -rf $run
tiny=(mixer=softmax mlp=false vocab_size=64 seq_len=32 mqar_cells=4x32,2x16 mqar_train_examples=512
      mqar_test_examples=64 d_model=16 n_head=2 batch_size=16 lr=3e-3 short_conv=2 log_every=1
      eval_every=3 sparsity_every=3 save_every=5 steps=12 threads=1 tensorboard=true out_dir=$run
      focus_penalty=0.5 answer_supervision=0.5)
./train /dev/null "${tiny[@]}" stop_at_step=8 > $run.log
rm $run/ckpt_00000008.safetensors $run/latest
./train /dev/null "${tiny[@]}" >> $run.log
grep -q "resuming from $run/ckpt_00000005.safetensors (step 5)" $run.log || { cat $run.log; exit 1; }
ls $run | grep tfevents
# TensorBoard logs its purge of the orphaned steps 6-8 at the restart (a warning): kept, it is the point
$venv/bin/python tests/tensorboard_check.py $run
