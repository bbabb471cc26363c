#!/usr/bin/env bash
# make slurm-test: a tiny sweep through a real Slurm (docs/sweeps-engines.md#slurm). Stands up a
# single-node cluster on this machine from a temporary folder (munged, slurmctld and slurmd on
# localhost with a generated slurm.conf: no systemd, no cgroups, run as the current user),
# submits the job array `./sweep F --slurm` writes, waits, submits it again (the finished points'
# tasks exit at once), runs `./sweep F --collect`, and checks that summary.csv equals a local
# `./sweep F` run's in every column but the timings. Then two long points cancelled with scancel
# (SIGTERM, as at a time limit) save a checkpoint, and resume when the script is submitted again. Every daemon it started is stopped on the
# way out, whatever happens. Installs slurm-wlm and munge when missing (tests/engines/install.sh);
# skips loudly when it cannot, and fails then under ENGINES_REQUIRED=1 (CI).
# SLURM_TEST_TIMEOUT: seconds to wait for each submission (default 180); KEEP=1 keeps the folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/engines/common.sh
t0=$(date +%s)
timeout=${SLURM_TEST_TIMEOUT:-180}

tests/engines/install.sh slurm || skip "Slurm (slurm-wlm, munge) is not installed and could not be installed"
[ -x ./sweep ] && [ -x ./train ] || fail "build first: make"
sbin() { command -v "$1" 2>/dev/null || echo "/usr/sbin/$1"; }
MUNGED=$(sbin munged) SLURMCTLD=$(sbin slurmctld) SLURMD=$(sbin slurmd)
for p in "$MUNGED" "$SLURMCTLD" "$SLURMD" "$(sbin mungekey)"; do [ -x "$p" ] || skip "$p is missing"; done

# pids of the running processes with one of these command names
pids_of() {
    local p name n
    for p in /proc/[0-9]*; do
        read -r name 2>/dev/null < "$p/comm" || continue
        for n in "$@"; do [ "$name" = "$n" ] && echo "${p#/proc/}"; done
    done
    return 0
}
# two TCP ports nobody listens on (from /proc/net/tcp*, so no tool is needed)
free_ports() {
    local used p n=0
    used=" $(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk 'NR > 1 { split($2, a, ":"); print a[2] }' | sort -u | tr '\n' ' ') "
    for p in $(seq 46817 47817); do
        case $used in *" $(printf '%04X' "$p") "*) continue ;; esac
        echo "$p"; n=$((n + 1)); [ $n = 2 ] && return 0
    done
    fail "no free TCP port in 46817-47817"
}

T=$(mktemp -d /tmp/attnscope-slurm.XXXXXX)
chmod 755 "$T"  # munged wants every folder above its socket searchable by all
stepd_before=" $(pids_of slurmstepd | tr '\n' ' ') "
started=()  # the daemons this test started, stopped in reverse order on the way out
stop_all() {
    local rc=$? i pid
    set +e
    [ -n "${SLURM_CONF:-}" ] && [ -n "${job:-}" ] && scancel "$job" 2>/dev/null
    for ((i = ${#started[@]} - 1; i >= 0; i--)); do
        pid=${started[i]}
        kill "$pid" 2>/dev/null
        for _ in $(seq 100); do [ -d /proc/$pid ] || break; sleep 0.1; done
        [ -d /proc/$pid ] && { echo "slurm-test: $pid did not stop on SIGTERM; SIGKILL" >&2; kill -9 "$pid" 2>/dev/null; }
        wait "$pid" 2>/dev/null
    done
    # job steps started while the test ran end with their job (give them 5 s); any left is ours
    local left
    for i in $(seq 51); do
        left=""
        for pid in $(pids_of slurmstepd); do
            case $stepd_before in *" $pid "*) ;; *) left="$left $pid" ;; esac
        done
        [ -z "$left" ] && break
        [ $i = 51 ] && { echo "slurm-test: slurmstepd$left still running; SIGKILL" >&2; kill -9 $left 2>/dev/null; }
        sleep 0.1
    done
    if [ $rc -ne 0 ]; then
        for f in "$T"/log/*.log; do [ -f "$f" ] && { echo "--- $f (end)"; tail -15 "$f"; }; done >&2
    fi
    if [ "${KEEP:-0}" = 1 ] || [ $rc -ne 0 ]; then echo "slurm-test: the folder is kept: $T" >&2
    else rm -rf "$T"; fi
    exit $rc
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "a single-node Slurm on localhost in $T"
mkdir -p "$T/key" "$T/run" "$T/log" "$T/state" "$T/spool"
chmod 700 "$T/key"
chmod 755 "$T/run"
"$(sbin mungekey)" --create --keyfile="$T/key/munge.key" 2>/dev/null ||
    { dd if=/dev/urandom of="$T/key/munge.key" bs=1024 count=1 2>/dev/null && chmod 600 "$T/key/munge.key"; }
"$MUNGED" --foreground --key-file="$T/key/munge.key" --socket="$T/run/munge.sock" --pid-file="$T/run/munged.pid" \
    --log-file="$T/log/munged.log" --seed-file="$T/key/munged.seed" > "$T/log/munged.out" 2>&1 &
started+=($!)
for _ in $(seq 50); do [ -S "$T/run/munge.sock" ] && break; sleep 0.1; done
[ -S "$T/run/munge.sock" ] || fail "munged did not start: $(cat "$T/log/munged.out" "$T/log/munged.log" 2>/dev/null)"
ports=($(free_ports))
ctld_port=${ports[0]} d_port=${ports[1]}
user=$(id -un)
cat > "$T/slurm.conf" <<CONF
# A one-node cluster for tests/engines/slurm.sh: everything in $T, no cgroups.
ClusterName=attnscope-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/run/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
# the node is what this file says, whatever the machine has
SlurmdParameters=config_overrides
# finished jobs stay visible to scontrol long enough to be checked
MinJobAge=600
NodeName=localhost CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$T/slurm.conf
"$SLURMCTLD" -D -f "$SLURM_CONF" > "$T/log/slurmctld.out" 2>&1 &
started+=($!)
"$SLURMD" -D -f "$SLURM_CONF" -N localhost > "$T/log/slurmd.out" 2>&1 &
started+=($!)
for _ in $(seq 300); do
    [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break
    sleep 0.1
done
[ "$(sinfo -h -o %t 2>/dev/null)" = idle ] || fail "the node did not come up: $(sinfo 2>&1)"
sinfo

# Submits a script, waits for every task of the array (at most $timeout s), checks that each
# completed with exit 0; sets $job.
submit_and_wait() {
    job=$(sbatch --parsable "$1") || fail "sbatch $1"
    echo "submitted job $job"
    local end=$(($(date +%s) + timeout))
    while [ -n "$(squeue -h -j "$job" 2>/dev/null)" ]; do
        [ "$(date +%s)" -lt $end ] || { squeue; scontrol show job "$job"; fail "job $job still running after ${timeout}s"; }
        sleep 0.5
    done
    local states
    states=$(scontrol -o show job "$job" | grep -o 'JobState=[A-Z_]* .*ExitCode=[0-9:]*' | sed 's/ .*ExitCode=/ ExitCode=/' | sort | uniq -c)
    echo "$states"
    [ "$(echo "$states" | awk '{ n += $1 } END { print n }')" = "$2" ] || fail "job $job: want $2 tasks: $states"
    echo "$states" | grep -qv 'JobState=COMPLETED ExitCode=0:0' && fail "job $job: a task did not complete: $states"
    job=""
    return 0
}

F=$(tiny_sweep "$T")
OUT=$T/slurm_out
step "one point run by hand first, so the array holds the 3 unfinished ones"
./sweep "$F" --print --out "$OUT" --threads 1 | head -1 | sh > /dev/null || fail "the first point's command"

step "./sweep $F --slurm --out $OUT"
./sweep "$F" --slurm --out "$OUT" | tee "$T/slurm.txt"
grep -q '4 points, 3 not finished: a Slurm array of 3 tasks, 1 CPU each' "$T/slurm.txt" || fail "--slurm output"
grep -q "^#SBATCH --array=1-3$" "$OUT/slurm.sbatch" || fail "--slurm: want an array of 3: $(grep SBATCH "$OUT/slurm.sbatch")"
grep -q "^#SBATCH --cpus-per-task=1$" "$OUT/slurm.sbatch" || fail "--slurm: want 1 CPU per task"

step "sbatch $OUT/slurm.sbatch"
submit_and_wait "$OUT/slurm.sbatch" 3
cat "$OUT"/slurm/*.out
[ "$(cat "$OUT"/slurm/*.out | grep -c ': done in ')" = 3 ] || fail "want 3 tasks done"
sums() { (cd "$OUT" && find . -path ./slurm -prune -o -type f ! -name train.lock -print | sort | xargs cksum); }
before=$(sums)

step "sbatch $OUT/slurm.sbatch again: the finished points' tasks exit at once"
rm "$OUT"/slurm/*.out
submit_and_wait "$OUT/slurm.sbatch" 3
cat "$OUT"/slurm/*.out
[ "$(cat "$OUT"/slurm/*.out | grep -c ': finished before, skipped$')" = 3 ] || fail "want 3 tasks skipped"
[ "$(sums)" = "$before" ] || fail "submitting again changed the run folders"

collect_and_compare "$F" "$OUT"
step "long points cancelled (as by a time limit): ./train saves a checkpoint; submitted again, they resume"
printf 'base = tiny.conf\nname = long\nout = %s/long\nsteps = 1000000\nlog_every = 20\neval_every = 1000000\nsparsity_every = 1000000\nsave_every = 1000000\nseed = 0, 1\n' \
    "$T" > "$T/long.sweep"
./sweep "$T/long.sweep" --slurm > /dev/null
# Waits until both points have logged a training step past $1 (at most $timeout s).
wait_for_steps() {
    local end=$(($(date +%s) + timeout)) s
    for s in 0 1; do
        until grep -qE "^step +[0-9]*[1-9][0-9]{$1}/1000000" "$T/long/seed=$s/train.log" 2>/dev/null; do
            [ "$(date +%s)" -lt $end ] || { squeue; fail "seed=$s did not reach step 10^$1 in ${timeout}s"; }
            sleep 0.2
        done
    done
}
cancel_and_wait() {
    local id=$job end=$(($(date +%s) + 60))
    scancel "$id"
    while [ -n "$(squeue -h -j "$id" 2>/dev/null)" ]; do
        [ "$(date +%s)" -lt $end ] || fail "job $id still there 60 s after scancel"
        sleep 0.2
    done
    job=""
    cat "$T"/long/slurm/"${id}"_*.out
    [ "$(cat "$T"/long/slurm/"${id}"_*.out | grep -c ': interrupted after .* (submit again to continue)$')" = 2 ] ||
        fail "job $id: want 2 tasks interrupted"
}
job=$(sbatch --parsable "$T/long/slurm.sbatch")
wait_for_steps 2
cancel_and_wait
for s in 0 1; do
    grep -q '^interrupted: saving step' "$T/long/seed=$s/train.log" || fail "seed=$s: no checkpoint on SIGTERM"
done
job=$(sbatch --parsable "$T/long/slurm.sbatch")
end=$(($(date +%s) + timeout))
for s in 0 1; do
    until grep -q '^resuming from .*(step [1-9]' "$T/long/seed=$s/train.log"; do
        [ "$(date +%s)" -lt $end ] || fail "seed=$s did not resume"
        sleep 0.2
    done
done
cancel_and_wait
grep -h '^resuming from' "$T"/long/seed=*/train.log

echo "slurm-test: passed in $(($(date +%s) - t0))s (the daemons are stopped on exit)"
