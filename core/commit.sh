#!/bin/sh
# Writes the header core/provenance.c reads the build's commit from (build/commit.h, the path in
# $1), rewritten only when its text changes, so a build after a commit recompiles one file. The
# commit is the work tree's HEAD, with "+dirty" when tracked files differ from it; "unknown"
# outside git (a tarball) or when this folder is not its repository's top (a copy unpacked inside
# another repository must not name that one's commit).
out=${1:-build/commit.h}
here=$(pwd -P)
top=$(git rev-parse --show-toplevel 2>/dev/null)
commit=unknown
if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$here" ]; then
    commit=$(git rev-parse HEAD 2>/dev/null) || commit=unknown
    if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then commit="$commit+dirty"; fi
fi
mkdir -p "$(dirname "$out")" || exit 1
text="#define ATTNSCOPE_COMMIT \"$commit\""
[ -f "$out" ] && [ "$(cat "$out")" = "$text" ] && exit 0
printf '%s\n' "$text" > "$out.tmp" && mv "$out.tmp" "$out"
