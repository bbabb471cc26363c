// Fuzz target: llm.c token shards (data/shards.c) and the dataset and loader built on them
// (data/dataset.c). The input is one shard file; the first header int32 picks the magic/version
// only as the file says. Opened as `train_data` with seq_len 4 (a window is 5 tokens) and
// vocab_size 0 (from the data), every window is read, then two batches of 2 sequences, in order
// and shuffled. Properties: bad input exits 2 with one line naming the file; every token a
// window returns is one the shard holds (< vocab).
#include <stdint.h>
#include <string.h>

#include "data/dataset.h"
#include "data/shards.h"
#include "tests/fuzz/fuzz.h"

enum { T = 4, B = 2 };

static void read_shard(void *path) {
    Shard s;
    shard_open(&s, path);
    uint32_t mx = shard_check_tokens(&s, 0);
    for (long i = 0; i < s.ntok; i++)
        if (shard_token(&s, i) > mx) fuzz_fail("token %ld above the maximum %u", i, mx);
    shard_close(&s);

    Dataset ds;
    dataset_shards(&ds, path, "train_data", T, 0);
    int32_t in[B * T], tg[B * T];
    for (long i = 0; i < ds.n; i++) {
        dataset_get(&ds, i, in, tg);
        for (int t = 0; t < T; t++)
            if (in[t] < 0 || in[t] >= ds.vocab_size || tg[t] < 0 || tg[t] >= ds.vocab_size)
                fuzz_fail("window %ld: token outside [0, %d)", i, ds.vocab_size);
    }
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        Loader ld;
        loader_init(&ld, &ds, B, shuffle, 1);
        for (int k = 0; k < 2; k++) loader_next(&ld, in, tg);
        loader_free(&ld);
    }
    dataset_free(&ds);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    const char *path = fuzz_file("in.bin", data, size);
    if (fuzz_call(read_shard, (void *)path) == 2 && !strstr(fuzz_message(), "in.bin"))
        fuzz_fail("the message does not name the file: %s", fuzz_message());
    return 0;
}
