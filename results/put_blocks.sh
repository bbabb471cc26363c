#!/bin/sh
# Puts the blocks a results script prints into a page: in FILE, each block from its marker
# comment "<!-- TAG NAME -->" to "<!-- /TAG NAME -->" is replaced by the block of that name
# COMMAND prints (a marker FILE has that COMMAND does not print is an error, exit 1: nothing is
# written). Used by the --write modes of results/results_prose.sh and results/results2.sh.
#   results/put_blocks.sh TAG FILE COMMAND...
set -eu
tag=${1:?usage: results/put_blocks.sh TAG FILE COMMAND...}
file=${2:?usage: results/put_blocks.sh TAG FILE COMMAND...}
shift 2
"$@" > "$file.blocks" || { rm -f "$file.blocks"; exit 1; }
pat=$(printf '%s' "$tag" | sed 's/[.]/\\./g')
awk -v blocks="$file.blocks" -v open="^<!-- $pat [a-z_0-9]+ -->\$" -v shut="^<!-- /$pat [a-z_0-9]+ -->\$" '
BEGIN { while ((getline l < blocks) > 0) {
            if (l ~ open) { name = l; text[name] = "" }
            if (name != "") text[name] = text[name] l "\n"
            if (l ~ shut) name = "" } }
$0 ~ open { if (!($0 in text)) { print "put_blocks: " FILENAME ": no block " $0 " from the command" > "/dev/stderr"; exit 1 }
            printf "%s", text[$0]; skip = 1; next }
skip && $0 ~ shut { skip = 0; next }
!skip' "$file" > "$file.new" || { rm -f "$file.new" "$file.blocks"; exit 1; }
mv "$file.new" "$file"
rm -f "$file.blocks"
