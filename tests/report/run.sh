#!/bin/sh
# make report-test: trains a tiny MQAR run, evaluates it with --maps, renders its report.html in
# headless Chromium (Debian's `chromium`) and checks the screenshot is not blank and the page logged
# no console errors. The screenshot stays in build/report-test/report.png to look at.
set -eu
out=build/report-test
rm -rf "$out/run" "$out/report.png"
mkdir -p "$out"
command -v chromium >/dev/null || { echo "report-test: needs Debian's chromium (apt-get install chromium)"; exit 1; }
printf 'mixer = softmax\nmlp = false\n' > "$out/run.conf"
./train "$out/run.conf" vocab_size=64 seq_len=32 mqar_kv_pairs=4 mqar_train_examples=512 mqar_test_examples=64 \
    d_model=32 n_layer=2 n_head=2 batch_size=32 lr=3e-3 steps=60 save_every=20 eval_every=20 log_every=0 \
    sparsity_every=20 threads=1 out_dir="$out/run" > "$out/train.log"
./evaluate "$out/run" --maps threads=1 > "$out/evaluate.log"
profile=$(mktemp -d)
# chromium as root needs --no-sandbox; everything that would reach the network is off
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
    --disable-sync --no-first-run --user-data-dir="$profile" --enable-logging=stderr --v=0 \
    --window-size=1400,2400 --screenshot="$PWD/$out/report.png" "file://$PWD/$out/run/report.html" \
    > "$out/chromium.log" 2>&1 || true
rm -rf "$profile"
[ -s "$out/report.png" ] || { echo "report-test: no screenshot"; cat "$out/chromium.log"; exit 1; }
if grep -E 'CONSOLE|Uncaught|ERR_|Failed to load' "$out/chromium.log"; then
    echo "report-test: the page logged errors (above)"
    exit 1
fi
"$out/png_check" "$out/report.png"
echo "report-test: ok ($out/report.png)"
