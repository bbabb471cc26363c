# Shared by the engine tests (tests/engines/parallel.sh, slurm.sh): a tiny sweep, a local run
# to compare with, and the comparison of two summary.csv files without the timing columns.
# Sourced from the repository root.

# A command that fails under set -e says where.
trap 'echo "FAIL: $0 line $LINENO: $BASH_COMMAND" >&2' ERR

# The test fails: one line, exit 1.
fail() { echo "FAIL: $*" >&2; exit 1; }

# The engine cannot be had here: a loud skip, exit 0, unless ENGINES_REQUIRED=1 (CI), where
# not running is a failure.
skip() {
    echo "######################################################################" >&2
    echo "SKIPPED: $*" >&2
    echo "######################################################################" >&2
    [ "${ENGINES_REQUIRED:-0}" = 1 ] && fail "ENGINES_REQUIRED=1: the test must run"
    exit 0
}

step() { echo; echo "--- $* ($(date +%T))"; }

# A tiny sweep in folder $1: 4 points (softmax and GLA, seeds 0 and 1) of a 2-layer
# model (d_model 16) on a small MQAR task, 60 steps at a high learning rate, so softmax attention
# already focuses (S about 0.45): well under a second each. Prints the file's path.
tiny_sweep() {
    cat > "$1/tiny.conf" <<'CONF'
mlp = false
vocab_size = 64
seq_len = 32
mqar_kv_pairs = 4
mqar_train_examples = 256
mqar_test_examples = 64
d_model = 16
batch_size = 8
lr = 3e-2
steps = 60
log_every = 10
eval_every = 20
sparsity_every = 20
save_every = 20
CONF
    printf 'base = tiny.conf\nname = engines\nout = %s/out\nmixer = softmax, gla\nseed = 0, 1\n' "$1" > "$1/engines.sweep"
    echo "$1/engines.sweep"
}

# summary.csv without the timing columns (tok_per_s, minutes*), which differ from run to run.
# Fields are split at commas outside double quotes (point names hold commas).
csv_without_timings() {
    awk '
    function split_csv(line, f,    n, i, c, q) {
        n = 1; f[1] = ""; q = 0
        for (i = 1; i <= length(line); i++) {
            c = substr(line, i, 1)
            if (c == "\"") q = !q
            if (c == "," && !q) { f[++n] = ""; continue }
            f[n] = f[n] c
        }
        return n
    }
    NR == 1 { n = split_csv($0, h); for (i = 1; i <= n; i++) keep[i] = h[i] !~ /^(tok_per_s|minutes)/ }
    {
        n = split_csv($0, f); out = ""; sep = ""
        for (i = 1; i <= n; i++) if (keep[i]) { out = out sep f[i]; sep = "," }
        print out
    }' "$1"
}

# Checks that two summary.csv files agree in every column but the timings, and that they are
# worth comparing: every one of the sweep's 4 points done, the three timing columns left out.
same_summary() {
    local want=$1 got=$2
    [ -f "$want" ] || fail "no $want"
    [ -f "$got" ] || fail "no $got"
    local dropped
    dropped=$(head -1 "$want" | tr ',' '\n' | grep -E '^(tok_per_s|minutes)' | tr '\n' ' ')
    [ "$dropped" = "minutes_to_0.99 minutes tok_per_s " ] || fail "timing columns of $want: '$dropped'"
    [ "$(grep -c ',done,' "$got")" = 4 ] || fail "$got: want 4 points done:
$(cat "$got")"
    if ! diff <(csv_without_timings "$want") <(csv_without_timings "$got") > "$got.diff"; then
        fail "$got differs from the local run's $want beyond the timings:
$(cat "$got.diff")"
    fi
    echo "summary.csv: the same as the local run's in all $(head -1 "$want" | tr ',' '\n' | grep -vcE '^(tok_per_s|minutes)') columns but the timings, $(($(wc -l < "$got") - 1)) points"
}

# The local run the engines are compared with: ./sweep FILE --out DIR --threads 1 (one thread:
# the machine may be busy, and results do not depend on the thread count).
local_run() {
    ./sweep "$1" --out "$2" --threads 1 > "$2.log" 2>&1 || { cat "$2.log"; fail "./sweep $1 --out $2 failed"; }
    grep -q '4 run, 0 skipped (finished before), 0 failed' "$2.log" || { cat "$2.log"; fail "local run"; }
}

# ./sweep FILE --collect --out DIR (all 4 points done), then a local run of the same points in a
# folder of its own, and the comparison of their summary.csv.
collect_and_compare() {
    local f=$1 out=$2 log
    step "./sweep $f --collect --out $out"
    log=$out.collect.log
    ./sweep "$f" --collect --out "$out" > "$log" || { cat "$log"; fail "--collect"; }
    grep -E '^summary: .*csv|done, .* missing' "$log"
    grep -q '4 done, 0 partial, 0 failed, 0 missing' "$log" || { cat "$log"; fail "--collect: not 4 done"; }
    step "a local run of the same points: ./sweep $f"
    local_run "$f" "$out.local"
    same_summary "$out.local/summary.csv" "$out/summary.csv"
}
