#!/bin/sh
# make report-test: trains a tiny MQAR run, evaluates it with --maps, renders its report.html in
# headless Chromium (Debian's `chromium`) and checks the screenshot is not blank and the page logged
# no console errors, that at 1280 px (a laptop's window) the page does not scroll sideways, and that
# each intervention figure shows its title once. The screenshot stays in build/report-test/report.png.
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
./evaluate "$out/run" intervene=flatten:0,0.5,1 layer=causal threads=1 > "$out/intervene.log"
# 1280 px wide, a laptop's window: the page must not scroll sideways (a wide table scrolls in its own
# box). A copy of the page with a script at its end writes what the layout measured into the DOM,
# which --dump-dom prints.
cp "$out/run/report.html" "$out/measure.html"
cat >> "$out/measure.html" <<'JS'
<script>document.body.setAttribute("data-measured", "scrollWidth=" + document.documentElement.scrollWidth +
  " innerWidth=" + window.innerWidth);</script>
JS
profile=$(mktemp -d)
# chromium as root needs --no-sandbox; everything that would reach the network is off
flags="--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
    --disable-sync --no-first-run --user-data-dir=$profile --enable-logging=stderr --v=0 --hide-scrollbars"
chromium $flags --window-size=1280,2400 --screenshot="$PWD/$out/report.png" "file://$PWD/$out/run/report.html" \
    > "$out/chromium.log" 2>&1 || true
chromium $flags --window-size=1280,2400 --dump-dom "file://$PWD/$out/measure.html" > "$out/measure.dom" \
    2> "$out/chromium-measure.log" || true
rm -rf "$profile"
[ -s "$out/report.png" ] || { echo "report-test: no screenshot"; cat "$out/chromium.log"; exit 1; }
if grep -E 'CONSOLE|Uncaught|ERR_|Failed to load' "$out/chromium.log"; then
    echo "report-test: the page logged errors (above)"
    exit 1
fi
measured=$(sed -n 's/.*data-measured="\([^"]*\)".*/\1/p' "$out/measure.dom" | head -1)
[ -n "$measured" ] || { echo "report-test: the page's width was not measured"; cat "$out/chromium-measure.log"; exit 1; }
sw=$(echo "$measured" | sed 's/scrollWidth=\([0-9]*\).*/\1/')
iw=$(echo "$measured" | sed 's/.*innerWidth=\([0-9]*\).*/\1/')
[ "$sw" -le "$iw" ] || { echo "report-test: at 1280 px the page is $sw px wide ($measured): it scrolls sideways"; exit 1; }
# each figure's title once: a figure's own title is not repeated as its panel's
for svg in "$out"/run/intervention_*.svg; do
    title=$(sed -n 's/.*font-size="16"[^>]*>\([^<]*\)<.*/\1/p' "$svg" | head -1)
    [ -z "$title" ] || [ "$(grep -o -F ">$title<" "$svg" | wc -l)" -eq 1 ] ||
        { echo "report-test: $svg: the title '$title' appears more than once"; exit 1; }
done
"$out/png_check" "$out/report.png"
echo "report-test: ok ($out/report.png; at 1280 px: $measured)"
