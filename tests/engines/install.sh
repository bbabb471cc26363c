#!/usr/bin/env bash
# tests/engines/install.sh parallel|slurm...: installs what the engine tests need from Debian's
# packages when it is missing (parallel; slurm-wlm: Slurm's controller, node daemon and client,
# with munge), then stops any daemon the install started (a package's postinst may start munged or
# slurmd where services can start), so nothing is left running. Exit status 0 when every engine
# named is there afterwards, 1 when one could not be installed (the message says why).
set -uo pipefail

# pids of the running processes with one of these command names
pids_of() {
    local p name
    for p in /proc/[0-9]*; do
        read -r name 2>/dev/null < "$p/comm" || continue
        for n in "$@"; do [ "$name" = "$n" ] && echo "${p#/proc/}"; done
    done
}
DAEMONS=(munged slurmctld slurmd slurmstepd slurmdbd)
# 0 while a process runs (a zombie, dead and waiting for its parent, does not)
alive() { [ -d /proc/$1 ] && [ "$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null)" != Z ]; }

need=()
for engine in "$@"; do
    case $engine in
        parallel) command -v parallel >/dev/null || need+=(parallel) ;;
        slurm)
            for t in munged mungekey slurmctld slurmd sbatch; do
                command -v $t >/dev/null || [ -x /usr/sbin/$t ] || { need+=(slurm-wlm munge); break; }
            done ;;
        *) echo "install.sh: unknown engine '$engine' (expected parallel or slurm)" >&2; exit 2 ;;
    esac
done
[ ${#need[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then SUDO="sudo -n"
    else echo "install.sh: ${need[*]} missing, and installing needs root (or sudo without a password)" >&2; exit 1; fi
fi
command -v apt-get >/dev/null || { echo "install.sh: ${need[*]} missing and no apt-get to install them" >&2; exit 1; }
before=" $(pids_of "${DAEMONS[@]}" | tr '\n' ' ') "
echo "install.sh: installing ${need[*]}"
$SUDO apt-get update -qq < /dev/null || echo "install.sh: apt-get update failed; trying the install anyway" >&2
log=$(mktemp)
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" < /dev/null > "$log" 2>&1
rc=$?
[ $rc -ne 0 ] && tail -20 "$log" >&2
rm -f "$log"
# stop what the install started (only processes that were not running before it)
for pid in $(pids_of "${DAEMONS[@]}"); do
    case $before in *" $pid "*) continue ;; esac
    echo "install.sh: stopping $(cat /proc/$pid/comm 2>/dev/null) (pid $pid), started by the install"
    $SUDO kill "$pid" 2>/dev/null
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
done
[ $rc -eq 0 ] || { echo "install.sh: apt-get install ${need[*]} failed (exit $rc)" >&2; exit 1; }
exit 0
