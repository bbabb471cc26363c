#!/usr/bin/env bash
# tests/engines/install.sh stops the daemons an install started and only those: run against a
# stand-in apt-get whose "install" starts a process named munged (a copy of sleep), with
# another munged running from before, and parallel missing from PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/engines/common.sh
S=$(mktemp -d /tmp/attnscope-install-test.XXXXXX)
old=""
trap 'kill $old 2>/dev/null; rm -rf "$S"' EXIT
mkdir "$S/bin"
for t in bash cat cut tr seq sleep tail rm mktemp id dirname; do ln -s "$(command -v $t)" "$S/bin/$t"; done
cp "$(command -v sleep)" "$S/munged"
cat > "$S/bin/apt-get" <<STUB
#!$(command -v bash)
# a stand-in: "install" starts a daemon and leaves it running, as a postinst may
[ "\$1" = install ] && { "$S/munged" 300 < /dev/null > /dev/null 2>&1 & echo \$! > "$S/started"; }
exit 0
STUB
chmod +x "$S/bin/apt-get"
"$S/munged" 300 < /dev/null > /dev/null 2>&1 &
old=$!
[ "$(id -u)" = 0 ] || skip "install_test: needs root (install.sh asks for sudo otherwise)"
PATH=$S/bin bash tests/engines/install.sh parallel > "$S/out" 2>&1 || { cat "$S/out"; fail "install.sh failed"; }
started=$(cat "$S/started")
grep -q "install.sh: stopping munged (pid $started), started by the install" "$S/out" || { cat "$S/out"; fail "no stop message"; }
[ ! -d /proc/$started ] || [ "$(cut -d' ' -f3 /proc/$started/stat)" = Z ] || fail "munged $started, started by the install, still runs"
[ -d /proc/$old ] || fail "install.sh stopped munged $old, which ran before the install"
echo "install.sh: stopped the daemon the install started ($started), left the one from before ($old)"
