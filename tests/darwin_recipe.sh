#!/usr/bin/env bash
# The Makefile's macOS branch, checked on Linux: `make -n` with UNAME_S=Darwin and a stand-in
# `brew` that answers --prefix from a temporary folder. macOS itself is not available to test on;
# this checks the commands the recipe would run, not that they work there.
#   1. Apple clang + Homebrew libomp: -Xpreprocessor -fopenmp, include and lib paths, -lomp
#   2. no libomp, Homebrew gcc-9 and gcc-14: CC is gcc-14 (the newest), plain -fopenmp
#   3. neither: single-threaded with the stub <omp.h>, and the build says so once
#   arm64 gets -mcpu=native, x86_64 -march=native.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # check NAME OUTPUT_FILE [!]REGEX...
    local name=$1 out=$2
    shift 2
    for re in "$@"; do
        if [[ $re == '!'* ]]; then
            if grep -qE -- "${re#!}" "$out"; then echo "FAIL $name: found /${re#!}/"; fail=1; fi
        elif ! grep -qE -- "$re" "$out"; then
            echo "FAIL $name: no /$re/"; fail=1
        fi
    done
}
brew_stub() {  # brew_stub PREFIX: a fake brew answering `--prefix` and `--prefix FORMULA`
    mkdir -p "$1/bin"
    printf '#!/bin/sh\n[ "$1" = --prefix ] || exit 1\n[ -n "$2" ] && echo "%s/opt/$2" || echo "%s"\n' \
        "$1" "$1" > "$1/brew"
    chmod +x "$1/brew"
}
# (-Xpreprocessor -fopenmp shown as XPP_FOPENMP, so a bare -fopenmp can be told apart)
mk() { make -n -B all UNAME_S=Darwin BREW="$1" "${@:2}" 2>&1 | sed 's/-Xpreprocessor -fopenmp/XPP_FOPENMP/g'; }

# 1. Apple clang + libomp, on Apple Silicon
p=$tmp/hb1
brew_stub "$p"
mkdir -p "$p/opt/libomp/include" "$p/opt/libomp/lib"
touch "$p/opt/libomp/include/omp.h"
mk "$p/brew" UNAME_M=arm64 > "$tmp/1.txt"
check "clang+libomp" "$tmp/1.txt" \
    "^cc .*-mcpu=native .*XPP_FOPENMP -I$p/opt/libomp/include .*-c model/kernels/gemm.c" \
    "^cc .* -o train .*-L$p/opt/libomp/lib -lomp -lz -lm" '!-march=native' '!OpenMP not found' \
    '!(^| )-fopenmp( |$)'

# 2. no libomp, Homebrew gcc-9 and gcc-14 (the newest by number wins), on an Intel Mac
p=$tmp/hb2
brew_stub "$p"
printf '#!/bin/sh\n' > "$p/bin/gcc-9"
printf '#!/bin/sh\n' > "$p/bin/gcc-14"
printf '#!/bin/sh\n' > "$p/bin/gcc-ar-14"
chmod +x "$p/bin/"gcc-*
mk "$p/brew" UNAME_M=x86_64 > "$tmp/2.txt"
check "homebrew gcc" "$tmp/2.txt" "^$p/bin/gcc-14 .*-march=native .*-fopenmp .*-c model/kernels/gemm.c" \
    "^$p/bin/gcc-14 .* -o train " '!XPP_FOPENMP' '!-lomp' '!gcc-9' '!OpenMP not found'
# ... but CC given on the command line is kept
make -n -B all UNAME_S=Darwin UNAME_M=x86_64 BREW="$p/brew" CC=clang 2>&1 > "$tmp/2b.txt" || true
check "CC=clang kept" "$tmp/2b.txt" "^clang .*-c model/kernels/gemm.c" '!gcc-14'

# 3. no OpenMP at all (no brew)
mk /nonexistent/brew UNAME_M=arm64 > "$tmp/3.txt"
check "no OpenMP" "$tmp/3.txt" "-Wno-unknown-pragmas -Icore/no_openmp .*-c model/kernels/gemm.c" \
    "OpenMP not found: building single-threaded \(for threads: brew install libomp" \
    '!(^| )-fopenmp( |$)' '!-lomp'
[ "$(grep -c 'OpenMP not found' "$tmp/3.txt")" = 1 ] || { echo "FAIL no OpenMP: said more than once"; fail=1; }

if [ $fail = 0 ]; then echo "darwin recipe: clang+libomp, Homebrew gcc, no OpenMP: ok"; fi
exit $fail
