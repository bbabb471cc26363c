#!/usr/bin/env bash
# The loop of every marked function of tests/vectorize/probe.c (vmath.h's exp, sigmoid, SiLU,
# softplus and log in `#pragma omp simd` loops) must be vectorized by GCC with the build's
# floating-point flags, for AVX2 (x86-64-v3), AVX-512 (x86-64-v4) and, when its cross compiler is
# here, arm64. Without -fno-trapping-math GCC 12 vectorized 2 of the 8 for AVX2 (all 8 for
# AVX-512), and an AVX2 laptop ran the others a lane at a time
# (docs/laptops.md#speed-on-avx2-and-neon-the-elementwise-math-in-vectors). `make vectorize-check`
# runs it with the Makefile's CC and FP_FLAGS; .ci/run runs it.
# Usage: CC=gcc FP_FLAGS="..." tests/vectorize/check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
CC=${CC:-cc}
FP_FLAGS=${FP_FLAGS:?FP_FLAGS: the Makefile passes its floating-point flags}
ARM64_CC=${ARM64_CC:-aarch64-linux-gnu-gcc}
probe=tests/vectorize/probe.c
if ! "$CC" --version 2>/dev/null | grep -qiE 'gcc|free software'; then
    echo "vectorize-check: $CC is not GCC (the check reads GCC's -fopt-info); nothing checked"
    exit 0
fi
# "first:last" line ranges of the marked functions (the marker's line to the next "}" line)
regions=$(awk '/VEC:/ { start = NR } /^}/ && start { print start ":" NR; start = 0 }' "$probe")
n_marked=$(echo "$regions" | wc -l)
fail=0
# check CC ARCHFLAG FLAGS...: the first lines of the marked functions GCC vectorized no loop in
check() {
    local cc=$1 arch=$2
    shift 2
    local lines missed=""
    lines=$("$cc" -std=c11 -O3 "$arch" "$@" -fopenmp-simd -I. -fopt-info-vec-optimized -c "$probe" -o /dev/null 2>&1 |
        sed -n "s|^$probe:\([0-9]*\):.*loop vectorized.*|\1|p")
    for r in $regions; do
        local hit=0
        for l in $lines; do [ "$l" -ge "${r%:*}" ] && [ "$l" -le "${r#*:}" ] && hit=1; done
        [ $hit = 1 ] || missed+=" ${r%:*}"
    done
    echo "$missed"
}
targets=("$CC -march=x86-64-v3" "$CC -march=x86-64-v4")
case "$(uname -m)" in
aarch64 | arm64) targets=("$CC -march=armv8-a") ;;
*) command -v "$ARM64_CC" >/dev/null && targets+=("$ARM64_CC -march=armv8-a") ;;
esac
for t in "${targets[@]}"; do
    missed=$(check $t $FP_FLAGS)
    if [ -n "$missed" ]; then
        echo "vectorize-check: $t $FP_FLAGS: no loop vectorized in the functions at $probe lines$missed"
        fail=1
    else
        echo "vectorize-check: $t $FP_FLAGS: the $n_marked marked functions vectorized"
    fi
done
# What the check guards against, for the record: the same compile without -fno-trapping-math.
without=$(echo "$FP_FLAGS" | sed 's/-fno-trapping-math//')
missed=$(check ${targets[0]} $without)
echo "vectorize-check: for comparison, ${targets[0]} without -fno-trapping-math:" \
    "$((n_marked - $(wc -w <<< "$missed"))) of $n_marked vectorized"
exit $fail
