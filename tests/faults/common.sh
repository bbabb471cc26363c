# Shared by the fault scripts: the tiny run they interrupt, and checkpoint comparison.
# TRAIN: the trainer (default ./train). Runs from the repository root.
TRAIN=${TRAIN:-./train}
# 1 thread (bit-identical resume), a checkpoint after every step.
RUN_ARGS="vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=512 mqar_test_examples=64
          d_model=32 n_head=2 batch_size=16 lr=3e-3 eval_every=20 sparsity_every=0 log_every=1
          save_every=1 threads=1"

# The data section of a safetensors file (the bytes after the 8-byte length and the header):
# the tensors. Headers differ between runs (the config names out_dir).
data_section() {
    local hlen
    hlen=$(od -An -tu8 -N8 "$1" | tr -d ' ')
    tail -c +$((9 + hlen)) "$1"
}

# Prints "step loss" of every train record of a metrics.jsonl.
train_losses() {
    grep '"type":"train"' "$1" | sed 's/.*"step":\([0-9]*\),"loss":\([^,]*\),.*/\1 \2/'
}

# Same tensors and same losses in two run folders, for checkpoint file $3.
same_run() {
    if ! cmp -s <(data_section "$1/$3") <(data_section "$2/$3"); then
        echo "FAIL: the tensors of $2/$3 differ from the uninterrupted run's"
        return 1
    fi
    if ! diff <(train_losses "$1/metrics.jsonl") <(train_losses "$2/metrics.jsonl") > /dev/null; then
        echo "FAIL: the losses in $2/metrics.jsonl differ from the uninterrupted run's:"
        diff <(train_losses "$1/metrics.jsonl") <(train_losses "$2/metrics.jsonl") | head -5
        return 1
    fi
}
