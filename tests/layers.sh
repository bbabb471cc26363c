#!/bin/sh
# The layering of the sources (docs/design.md#layers), checked over the #include lines:
#   1. folders in layers, lowest first: a file includes headers of its own layer or lower ones;
#   2. a module is a .c/.h pair (foo.c implements foo.h): no two modules include each other, and
#      no longer cycle either;
#   3. every .c has its .h and every .h its .c, but for the exceptions named below;
#   4. a program's main() is in train.c or a *_main.c, never in core/, data/ or model/;
#   5. a plain reference (*_naive.h) is included by the tests and its own .c only: the Makefile
#      links the *_naive.c files into the test runner alone.
# Usage: tests/layers.sh [ROOT]; prints each violation and exits 1, or one line and exits 0.
# POSIX sh and awk only (CI has no Python); `make test` runs it (tests/test_layering.c).
set -eu
cd "${1:-.}"

# Folder -> layer. A file's folder is the longest prefix listed here. build/ holds one header
# included by a source, build/commit.h (the commit core/provenance.c reads, written by
# core/commit.sh): it is core's.
LAYERS='
core 0
build 0
data 1
tokenizer 2
model/kernels 3
model 4
trainer 5
eval 6
ablation 7
bench 8
. 8
tests 9
'
# A .c without its own .h: programs, the mixers (each registers in mixer.h's table, registry.c),
# the GEMM kernels of gemm_kernels.h, the tests. A shell pattern per line.
C_ONLY='
train.c
*/*_main.c
bench/*.c
model/mixers/*.c
model/kernels/gemm_x86.c
model/kernels/gemm_neon.c
tests/*
'
# Headers without a .c: types, inline functions and interfaces that other files implement.
H_ONLY='
core/real.h
core/no_openmp/omp.h
model/precision.h
model/kernels/gemm_kernels.h
model/kernels/vmath.h
model/mixers/mixer.h
tests/*
'

files=$( (ls ./*.c; find -L core data tokenizer model trainer eval ablation bench tests -name '*.[ch]') |
    sed 's|^\./||' | sort)
[ -n "$files" ] || { echo "layers.sh: no sources found in $(pwd)"; exit 1; }

for f in $files; do
    # FILE<TAB>INCLUDED for each #include "..." (the quoted includes are the project's own)
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | sed "s|^|$f	|"
    printf '%s\t\n' "$f"
done | awk -F'\t' -v layers="$LAYERS" -v c_only="$C_ONLY" -v h_only="$H_ONLY" '
function layer_of(path,    d, best, n) {
    best = "."
    for (d in rank) {
        if (d == ".") continue
        n = length(d)
        if (substr(path, 1, n + 1) == d "/" && n > length(best == "." ? "" : best)) best = d
    }
    return best
}
function glob_to_re(g) {
    gsub(/\./, "\\.", g); gsub(/\*/, ".*", g)
    return "^" g "$"
}
function matches(list, n, path,    i) {
    for (i = 1; i <= n; i++) if (path ~ list[i]) return 1
    return 0
}
function module(path) { sub(/\.[ch]$/, "", path); return path }
function bad(msg) { print msg; n_bad++ }
function visit(m,    k, i, cyc) {
    state[m] = 1; stack[++depth] = m
    for (k = 1; k <= n_out[m]; k++) {
        i = out[m, k]
        if (state[i] == 1) {
            cyc = i
            for (j = depth; j >= 1 && stack[j] != i; j--) cyc = stack[j] " -> " cyc
            bad("module cycle: " i " -> " cyc)
        } else if (!state[i]) visit(i)
    }
    depth--; state[m] = 2
}
BEGIN {
    n = split(layers, l, "\n")
    for (i = 1; i <= n; i++) if (split(l[i], w, " ") == 2) { rank[w[1]] = w[2] }
    n_c = 0; n = split(c_only, l, "\n"); for (i = 1; i <= n; i++) if (l[i] != "") c_re[++n_c] = glob_to_re(l[i])
    n_h = 0; n = split(h_only, l, "\n"); for (i = 1; i <= n; i++) if (l[i] != "") h_re[++n_h] = glob_to_re(l[i])
}
{
    f = $1; inc = $2
    if (!(f in seen)) { seen[f] = 1; order[++n_files] = f }
    if (inc == "") next
    if (!(inc in exists_cache)) exists_cache[inc] = (system("test -f \"" inc "\"") == 0)
    if (!exists_cache[inc]) { bad(f ": includes \"" inc "\", which is not a file under the root"); next }
    lf = layer_of(f); li = layer_of(inc)
    if (rank[li] + 0 > rank[lf] + 0)
        bad(f ": includes " inc " (" li "/, layer " rank[li] ") above its own layer (" lf "/, layer " rank[lf] ")")
    if (inc ~ /_naive\.h$/ && lf != "tests" && module(f) != module(inc))
        bad(f ": includes " inc ", a plain reference linked into the tests only")
    mf = module(f); mi = module(inc)
    if (!(mf in mods)) { mods[mf] = 1; n_mods++ }
    if (!(mi in mods)) { mods[mi] = 1; n_mods++ }
    if (mf != mi && !((mf, mi) in edge)) { edge[mf, mi] = 1; out[mf, ++n_out[mf]] = mi }
}
END {
    for (k = 1; k <= n_files; k++) {
        f = order[k]
        if (f ~ /\.c$/ && !((module(f) ".h") in seen) && !matches(c_re, n_c, f))
            bad(f ": a .c without its .h (" module(f) ".h), and not a program, mixer or kernel (tests/layers.sh: C_ONLY)")
        if (f ~ /\.h$/ && !((module(f) ".c") in seen) && !matches(h_re, n_h, f))
            bad(f ": a header without its .c (" module(f) ".c), and not listed in tests/layers.sh: H_ONLY")
        if (f ~ /\.c$/ && layer_of(f) != "tests" && layer_of(f) != "bench") {
            cmd = "grep -Eq \"^(int|static int) main[(]\" \"" f "\""
            has_main = (system(cmd) == 0)
            if (has_main && f != "train.c" && f !~ /_main\.c$/)
                bad(f ": defines main() but is not train.c or a *_main.c")
            if ((has_main || f ~ /_main\.c$/) && f ~ /^(core|data|model)\//)
                bad(f ": a program driver in " layer_of(f) "/ (programs live beside what they drive, above model/)")
        }
    }
    # cycles between modules; "a.h includes b.h, b.c includes a.h" counts (the pair is one module)
    for (m in mods) if (!state[m]) visit(m)
    if (n_bad) { printf "layers.sh: %d problem(s) in %d files\n", n_bad, n_files; exit 1 }
    printf "layers.sh: %d files, %d modules: layers, module cycles, .c/.h pairs and program drivers as docs/design.md#layers says\n", n_files, n_mods
}'
