#!/usr/bin/env bash
# Makes, in the current folder, the files the table of docs/reliability.md#bad-input runs its
# commands on (tests/test_faults.c runs every row and compares the message and the exit status).
# Usage: cd SCRATCH && bash PATH/TO/bad_input_fixtures.sh PROGRAM_FOLDER
set -euo pipefail
P=$1
printf 'mixer = softmax\nvocab_size = 64\nseq_len = 32\nmqar_train_examples = 256\nmqar_test_examples = 32\nd_model = 16\nn_head = 2\nbatch_size = 16\nthreads = 1\nsave_every = 2\nsparsity_every = 0\neval_every = 0\n' > ok.conf
printf 'd_model = 64\nn_heads = 2\n' > typo.conf
printf 'lr = abc\n' > badval.conf
printf 'include = nope.conf\n' > noinc.conf
printf 'include = loop.conf\n' > loop.conf
printf 'd_model 64\n' > noeq.conf
printf 'lr = 1e-3\n\0\0\0' > nul.conf
"$P/train" ok.conf steps=2 out_dir=run > /dev/null
cp run/ckpt_00000002.safetensors crc.safetensors
printf 'X' | dd of=crc.safetensors bs=1 seek=20000 conv=notrunc 2> /dev/null
head -c 10000 run/ckpt_00000002.safetensors > short.safetensors
printf 'not a checkpoint at all' > junk.safetensors
printf 'the cat sat on the mat, the cat ate the rat\n\nthe end of the cat\n' > text.txt
"$P/tokenize" train text.txt vocab_size=270 out=tok.bpe > /dev/null
sed 's/^97 116/97 117/' tok.bpe > edited.bpe
head -c 100 tok.bpe > short.bpe
"$P/tokenize" encode text.txt tokenizer=tok.bpe out=ok.bin > /dev/null 2>&1
head -c 1030 ok.bin > short.bin
cp ok.bin magic.bin && printf '\001' | dd of=magic.bin bs=1 seek=0 conv=notrunc 2> /dev/null
cp ok.bin tail.bin && printf 'xy' >> tail.bin
printf 'a plain file\n' > plain
printf 'd_model = 16\nmixer = softmax, nope\n' > badval.sweep
printf 'd_model = 16\nmixer softmax\n' > syntax.sweep
printf 'lr = 1e-3, 1e-3\n' > dup.sweep
printf 'zip = lr, seed\nlr = 1, 2\nseed = 1, 2, 3\n' > zip.sweep
# a uint32 shard (magic 20240801, version 7) of 8 tokens, one of them 2312681882
{ printf '\241\331\064\001\007\000\000\000\010\000\000\000'; head -c 1012 /dev/zero
  printf '\001\000\000\000\002\000\000\000\232\271\330\211\003\000\000\000'; head -c 16 /dev/zero; } > big.bin
# Reliability II rows (docs/reliability.md)
: > empty.txt
mkdir -p incdir
printf 'include = incdir\n' > incfolder.conf
printf 'sample_prompt = "unclosed\n' > quote.conf
printf 'base = ok.conf\nmixer = softmax, linear\n' > grid.sweep
"$P/tokenize" train text.txt vocab_size=260 out=other.bpe > /dev/null
"$P/train" ok.conf task=shards train_data=ok.bin val_data=ok.bin vocab_size=0 seq_len=16 steps=2 tokenizer=tok.bpe out_dir=textrun > /dev/null
LC_ALL=C sed 's/"step":"2"/"step":"3"/' run/ckpt_00000002.safetensors > stepedit.safetensors
