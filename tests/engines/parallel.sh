#!/usr/bin/env bash
# make parallel-test: a tiny sweep through GNU parallel (docs/sweeps-engines.md#gnu-parallel):
# `./sweep F --print | parallel -j 2`, the same once more (the finished points do nothing), then
# `./sweep F --collect`; its summary.csv must equal a local `./sweep F` run's in every column but
# the timings. Installs parallel when it is missing (tests/engines/install.sh); skips loudly when
# it cannot, and fails then under ENGINES_REQUIRED=1 (CI).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/engines/common.sh
t0=$(date +%s)

tests/engines/install.sh parallel || skip "GNU parallel is not installed and could not be installed"
[ -x ./sweep ] && [ -x ./train ] || fail "build first: make"
T=$(mktemp -d /tmp/attnscope-parallel.XXXXXX)
trap 'rm -rf "$T"' EXIT
F=$(tiny_sweep "$T")

step "./sweep $F --print | parallel --will-cite -j 2"
./sweep "$F" --print --out "$T/par" --jobs 2 --threads 2 > "$T/commands"
cat "$T/commands"
[ "$(wc -l < "$T/commands")" = 4 ] || fail "want 4 commands"
parallel --will-cite -j 2 < "$T/commands" > "$T/parallel1.log" 2>&1 || { cat "$T/parallel1.log"; fail "parallel: exit $?"; }
grep -c '^done: 60 steps' "$T/parallel1.log" | grep -qx 4 || { cat "$T/parallel1.log"; fail "want 4 runs of 60 steps"; }
# every file of every run folder, by content (./train rewrites its logs and config on a resume)
sums() { (cd "$T/par" && find . -type f ! -name train.lock | sort | xargs cksum); }  # train.lock holds the last pid
before=$(sums)

step "the same again: the finished points do nothing"
parallel --will-cite -j 2 < "$T/commands" > "$T/parallel2.log" 2>&1 || { cat "$T/parallel2.log"; fail "parallel again"; }
grep 'the run is complete' "$T/parallel2.log"
grep -c 'the run is complete (step 60 of 60); nothing to do' "$T/parallel2.log" | grep -qx 4 ||
    { cat "$T/parallel2.log"; fail "want 4 runs that say they are complete"; }
[ "$(sums)" = "$before" ] || fail "running the finished points again changed their folders"
[ -z "$(./sweep "$F" --print --unfinished --out "$T/par")" ] || fail "--unfinished still lists points"

collect_and_compare "$F" "$T/par"
echo "parallel-test: passed in $(($(date +%s) - t0))s"
