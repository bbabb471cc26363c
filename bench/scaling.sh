#!/usr/bin/env bash
# bench/scaling.sh: attnscope's softmax model beside PyTorch 2.x over a sweep of thread counts, in
# interleaved rounds (round r runs every thread count and every config, each attnscope row followed
# by its PyTorch variants, before round r + 1 starts), so a host's drift falls on both programs.
# Writes a log (every row as build/bench prints it, then the summary) and the rows as JSON lines.
#
# The summary, per config and thread count: attnscope's tokens/s and each PyTorch variant's, the
# median over the rounds (min-max), and the ratio attnscope / PyTorch per round, median (min-max);
# then the scaling model from the 1- and 2-thread medians: a step takes t(n) = s + p / n (s serial,
# p parallel: p = 2 (t1 - t2), s = 2 t2 - t1), its prediction at 4, 8 and 16 threads beside what
# was measured there, for attnscope and for each PyTorch variant (docs/performance.md#many-cores).
#
# Usage: bench/scaling.sh [--threads "1 2 4 8 12 16"] [--rounds 3] [--python PATH]
#          [--torch-variants LIST] [--no-torch] [--log FILE] [CONF ...]
#   CONF ...           default bench/zoology.conf bench/small.conf
#   --threads LIST     default 1 2 4 8 12 16, those above the machine's processors left out unless
#                      --oversubscribe
#   --summary JSONL    only print the summary of finished runs' JSON lines (several: cat them)
#   --python, --torch-variants, --steps, --warmup, --no-torch: passed to build/bench
# Needs build/bench (make build/bench) and, for PyTorch, build/torch-venv (make torch-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

threads="1 2 4 8 12 16" rounds=3 log="" summary_only="" oversub=0 confs=() bench_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --log) log=$2; shift 2 ;;
    --python | --torch-variants | --steps | --warmup) bench_args+=("$1" "$2"); shift 2 ;;
    --no-torch) bench_args+=("$1"); shift ;;
    --oversubscribe) oversub=1; shift ;;
    --summary) summary_only=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "scaling.sh: unknown option $1" >&2; exit 2 ;;
    *) confs+=("$1"); shift ;;
    esac
done
[ ${#confs[@]} -gt 0 ] || confs=(bench/zoology.conf bench/small.conf)

# The summary of a JSON-lines file of build/bench rows (softmax rows only).
summarize() {
    awk '
    function num(s, key,   m) { return match(s, "\"" key "\":[-0-9.e+]+") ? substr(s, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + 0 : 0 }
    function str(s, key) { return match(s, "\"" key "\":\"[^\"]*\"") ? substr(s, RSTART + length(key) + 4, RLENGTH - length(key) - 5) : "" }
    function median(list,   a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        lo = a[1]; hi = a[n]
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function add(k, v) { vals[k] = vals[k] (k in vals ? " " : "") v }
    function fmt(k,   m) { if (!(k in vals)) return "-"; m = median(vals[k]); return sprintf("%.0f (%.0f-%.0f)", m, lo, hi) }
    function fmtr(k,   m) { if (!(k in vals)) return "-"; m = median(vals[k]); return sprintf("%.2fx (%.2f-%.2f)", m, lo, hi) }
    /"mixer":"softmax"/ {
        c = str($0, "config"); n = num($0, "threads"); tok = num($0, "tokens_per_s")
        if (!(c in seen_c)) { seen_c[c] = 1; cs[++nc] = c }
        if (!((c, n) in seen_n)) { seen_n[c, n] = 1; ns[c] = ns[c] " " n }
        add(c SUBSEP n SUBSEP "attnscope", tok)
        add(c SUBSEP n SUBSEP "fwd", num($0, "fwd_ms")); add(c SUBSEP n SUBSEP "bwd", num($0, "bwd_ms")); add(c SUBSEP n SUBSEP "opt", num($0, "opt_ms"))
        bt[c] = num($0, "B") * num($0, "T")
        rest = $0
        while (match(rest, /\{"variant":"[^"]*","tokens_per_s":[0-9.]+/)) {
            item = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
            v = str(item, "variant"); t = num(item, "tokens_per_s")
            if (!((c, v) in seen_v)) { seen_v[c, v] = 1; vs[c] = vs[c] (vs[c] == "" ? "" : " ") v }
            if (t > 0) { add(c SUBSEP n SUBSEP v, t); add(c SUBSEP n SUBSEP "ratio " v, tok / t) }
        }
    }
    END {
        for (i = 1; i <= nc; i++) {
            c = cs[i]; nn = split(ns[c], th, " "); nv = split(vs[c], var, " ")
            printf "\n== %s (%d tokens a step): tokens/s, median of the rounds (min-max); x = attnscope / PyTorch per round\n", c, bt[c]
            printf "%-4s %-22s %-26s", "thr", "attnscope", "fwd / bwd / opt ms"
            for (j = 1; j <= nv; j++) printf " %-22s %-20s", "torch " var[j], "x " var[j]
            printf "\n"
            for (k = 1; k <= nn; k++) {
                n = th[k]; key = c SUBSEP n
                ph = sprintf("%.1f / %.1f / %.1f", median(vals[key SUBSEP "fwd"]), median(vals[key SUBSEP "bwd"]), median(vals[key SUBSEP "opt"]))
                printf "%-4s %-22s %-26s", n, fmt(key SUBSEP "attnscope"), ph
                for (j = 1; j <= nv; j++) printf " %-22s %-20s", fmt(key SUBSEP var[j]), fmtr(key SUBSEP "ratio " var[j])
                printf "\n"
            }
            # the scaling model: t(n) = s + p / n from the 1- and 2-thread medians (ms a step)
            if (!((c SUBSEP 1 SUBSEP "attnscope") in vals) || !((c SUBSEP 2 SUBSEP "attnscope") in vals)) continue
            printf "scaling model t(n) = s + p/n from 1 and 2 threads (ms a step; predicted tokens/s, measured where run):\n"
            nprog = split("attnscope " vs[c], prog, " ")
            for (j = 1; j <= nprog; j++) {
                p1 = c SUBSEP 1 SUBSEP prog[j]; p2 = c SUBSEP 2 SUBSEP prog[j]
                if (!(p1 in vals) || !(p2 in vals)) continue
                t1 = bt[c] / median(vals[p1]) * 1e3; t2 = bt[c] / median(vals[p2]) * 1e3
                par = 2 * (t1 - t2); ser = 2 * t2 - t1
                if (par <= 0 || ser < 0) {
                    printf "  %-18s t1 %.1f t2 %.1f ms: no model (%s); a busy host?\n", prog[j], t1, t2, par <= 0 ? "2 threads no faster than 1" : "more than 2x from 1 to 2 threads"
                    continue
                }
                printf "  %-18s t1 %.1f t2 %.1f: s = %.1f ms (%.0f%% of t1), p = %.1f ms;", prog[j], t1, t2, ser, 100 * ser / t1, par
                split("4 8 16", at, " ")
                for (q = 1; q <= 3; q++) {
                    tn = ser + par / at[q]
                    pred = tn > 0 ? bt[c] / tn * 1e3 : 0
                    meas = (c SUBSEP at[q] SUBSEP prog[j]) in vals ? sprintf(", measured %.0f", median(vals[c SUBSEP at[q] SUBSEP prog[j]])) : ""
                    printf " %d thr %.0f tok/s (%.1fx)%s;", at[q], pred, pred / median(vals[p1]), meas
                }
                printf "\n"
            }
        }
    }' "$1"
}

if [ -n "$summary_only" ]; then summarize "$summary_only"; exit 0; fi

[ -x build/bench ] || { echo "scaling.sh: build/bench is missing: make build/bench" >&2; exit 2; }
ncpu=$(nproc)
run_threads=()
for n in $threads; do
    if [ "$n" -gt "$ncpu" ] && [ $oversub = 0 ]; then echo "scaling.sh: $n threads left out ($ncpu processors; --oversubscribe runs them)"; continue; fi
    run_threads+=("$n")
done
stamp=$(date -u +%Y%m%dT%H%M%SZ)
[ -n "$log" ] || log=build/scaling-$stamp.log
mkdir -p "$(dirname "$log")"
jsonl=${log%.log}.jsonl
: > "$jsonl"
{
    echo "# bench/scaling.sh $stamp: commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') x $ncpu, $(uptime | sed 's/.*load/load/')"
    echo "# threads ${run_threads[*]}, rounds $rounds, configs ${confs[*]}, bench args ${bench_args[*]:-none}"
} | tee "$log"
for r in $(seq 1 "$rounds"); do
    for n in "${run_threads[@]}"; do
        for conf in "${confs[@]}"; do
            echo "## round $r, $n threads, $conf ($(date -u +%T), $(cut -d' ' -f1 /proc/loadavg) load)" | tee -a "$log"
            build/bench --mixers softmax --threads "$n" --tries 1 --out "$jsonl" ${bench_args[@]+"${bench_args[@]}"} \
                "$conf" bench_sparsity=false 2>&1 | grep --line-buffered -v '^%peak\|^timing (lower\|^$' | tee -a "$log"
        done
    done
done
summarize "$jsonl" | tee -a "$log"
echo "scaling.sh: log $log, rows $jsonl"
