// MQAR: known answers from zoology's numpy generator (numpy 1.24 legacy RandomState, see
// docs/mqar.md#the-generator), layout invariants, and spec validation.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "data/dataset.h"
#include "data/mqar.h"
#include "data/mt19937.h"
#include "data/task.h"
#include "tests/gradcheck.h"
#include "tests/test.h"

// FNV-1a 64 over the little-endian bytes of an int32 array (numpy's arr.astype('<i4').tobytes()).
static uint64_t fnv1a_i32(const int32_t *a, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = (uint32_t)a[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xff;
            h *= 0x100000001b3ULL;
        }
    }
    return h;
}

static MqarSpec spec(int V, int L, int K, long N, uint32_t seed) {
    return (MqarSpec){
        .vocab_size = V, .seq_len = L, .kv_pairs = K, .power_a = 0.01, .random_filler = 0, .seed = seed, .n_examples = N};
}

// inputs/labels [N, L]
static void gen(const MqarSpec *s, int32_t **x, int32_t **y) {
    size_t n = (size_t)s->n_examples * s->seq_len;
    *x = mallocCheck(n * sizeof(int32_t));
    *y = mallocCheck(n * sizeof(int32_t));
    mqar_generate(s, *x, *y);
}

static void check_row(const int32_t *x, const int32_t *want, int L, const char *what) {
    for (int t = 0; t < L; t++) CHECK(x[t] == want[t], "%s: position %d is %d, numpy has %d", what, t, x[t], want[t]);
}

// Labels of one row: exactly the listed (position, value) pairs, -100 elsewhere.
static void check_labels(const int32_t *y, int L, const int (*pv)[2], int K) {
    int count = 0;
    for (int t = 0; t < L; t++) count += y[t] != MQAR_IGNORE;
    CHECK(count == K, "%d labels, want %d", count, K);
    for (int i = 0; i < K; i++)
        CHECK(y[pv[i][0]] == pv[i][1], "label at %d is %d, numpy has %d", pv[i][0], y[pv[i][0]], pv[i][1]);
}

TEST(mqar_mt19937_matches_numpy) {
    Mt19937 m;
    mt_init_genrand(&m, 5489);  // np.random.seed(5489); randint(0, 2**32, 5, dtype=uint64)
    const uint32_t want[5] = {3499211612u, 581869302u, 3890346734u, 3586334585u, 545404204u};
    for (int i = 0; i < 5; i++) CHECK(mt_genrand_int32(&m) == want[i], "draw %d", i);
    mt_init_genrand(&m, 0);  // np.random.seed(0); random_sample(3)
    const double u[3] = {0.5488135039273248, 0.7151893663724195, 0.6027633760716439};
    for (int i = 0; i < 3; i++) CHECK(mt_genrand_res53(&m) == u[i], "double %d", i);
    int arr[10];  // np.random.seed(0); permutation(10)
    const int perm[10] = {2, 8, 4, 9, 1, 6, 7, 3, 0, 5};
    for (int i = 0; i < 10; i++) arr[i] = i;
    mt_init_genrand(&m, 0);
    mt_legacy_shuffle(&m, arr, 10);
    for (int i = 0; i < 10; i++) CHECK(arr[i] == perm[i], "permutation(10)[%d] = %d", i, arr[i]);
    int big[1000];  // np.random.seed(123); permutation(1000)[:8]
    const int want8[8] = {131, 203, 50, 585, 138, 632, 328, 461};
    for (int i = 0; i < 1000; i++) big[i] = i;
    mt_init_genrand(&m, 123);
    mt_legacy_shuffle(&m, big, 1000);
    for (int i = 0; i < 8; i++) CHECK(big[i] == want8[i], "permutation(1000)[%d] = %d", i, big[i]);
}

// The branch-free shuffle against the textbook loop, across MT block boundaries and sizes.
TEST(mqar_legacy_shuffle_equals_interval_loop) {
    Mt19937 *a = mallocCheck(sizeof *a), *b = mallocCheck(sizeof *b);
    mt_init_genrand(a, 42);
    mt_init_genrand(b, 42);
    static int x[5000], y[5000];
    const int sizes[] = {1, 2, 3, 17, 624, 625, 1000, 4095, 4096, 5000};
    for (int rep = 0; rep < 3; rep++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            int n = sizes[k];
            for (int i = 0; i < n; i++) x[i] = y[i] = i;
            mt_legacy_shuffle(a, x, (uint32_t)n);
            for (int i = n - 1; i >= 1; i--) {
                int j = (int)mt_random_interval(b, (uint32_t)i), t = y[i];
                y[i] = y[j];
                y[j] = t;
            }
            for (int i = 0; i < n; i++) CHECK(x[i] == y[i], "n=%d i=%d", n, i);
        }
    CHECK(mt_genrand_int32(a) == mt_genrand_int32(b), "streams diverged");
    free(a), free(b);
}

// Zoology's paper test set: V=8192, L=64, K=4, N=3000, seed=10. (The md5s of numpy's int64
// arrays begin 6f54b473642673e3 / 4040894a66b6929a.)
TEST(mqar_matches_numpy_v8192_seed10) {
    MqarSpec s = spec(8192, 64, 4, 3000, 10);
    int32_t *x, *y;
    gen(&s, &x, &y);
    CHECK(fnv1a_i32(x, 3000 * 64) == 0xe617802849cff0e0ULL, "inputs differ from numpy");
    CHECK(fnv1a_i32(y, 3000 * 64) == 0x5076e7d146c2bf1cULL, "labels differ from numpy");
    int32_t ex0[64] = {1602, 6657, 3245, 6138, 1050, 6082, 2974, 4110, 1602};
    ex0[14] = 3245, ex0[26] = 2974, ex0[48] = 1050;
    check_row(x, ex0, 64, "example 0");
    const int lab0[4][2] = {{8, 6657}, {14, 6138}, {26, 4110}, {48, 6082}};
    check_labels(y, 64, lab0, 4);
    int32_t last[64] = {3708, 6997, 2257, 4983, 2666, 7641, 973, 6600, 3708};
    last[26] = 973, last[48] = 2257, last[56] = 2666;
    check_row(x + 2999 * 64, last, 64, "example 2999");
    free(x), free(y);
}

// Zoology's basic example (Based-era train seed): its first example, as numpy gives it.
TEST(mqar_matches_numpy_v256_seed843828734) {
    MqarSpec s = spec(256, 64, 4, 10000, 843828734u);
    int32_t *x, *y;
    gen(&s, &x, &y);
    CHECK(fnv1a_i32(x, 10000 * 64) == 0x6de76888c48c1a7dULL, "inputs differ from numpy");
    CHECK(fnv1a_i32(y, 10000 * 64) == 0x6f12d5d960ec459dULL, "labels differ from numpy");
    int32_t ex0[64] = {106, 238, 88, 190, 98, 221, 123, 135, 123};
    ex0[12] = 98, ex0[14] = 106, ex0[16] = 88;
    check_row(x, ex0, 64, "example 0");
    const int lab0[4][2] = {{8, 135}, {12, 221}, {14, 238}, {16, 190}};
    check_labels(y, 64, lab0, 4);
    int32_t ex1[64] = {31, 139, 97, 247, 105, 180, 69, 203, 105};
    ex1[20] = 97, ex1[32] = 69, ex1[36] = 31;
    check_row(x + 64, ex1, 64, "example 1");
    free(x), free(y);
}

// K=16 with a small vocabulary: many gap rounds and a full query region.
TEST(mqar_matches_numpy_v128_k16) {
    MqarSpec s = spec(128, 64, 16, 500, 3);
    int32_t *x, *y;
    gen(&s, &x, &y);
    CHECK(fnv1a_i32(x, 500 * 64) == 0x6ee5c4d087e94eefULL, "inputs differ from numpy");
    CHECK(fnv1a_i32(y, 500 * 64) == 0xf04ba0288766df4fULL, "labels differ from numpy");
    const int32_t ex0[64] = {7,  111, 55, 96,  50, 65, 60, 109, 48, 99, 24, 92, 32, 67, 35, 79, 26, 74, 14, 93, 29, 118,
                             13, 89,  61, 115, 49, 80, 5,  104, 37, 86, 7,  0,  48, 0,  50, 0,  55, 0,  60, 0,  14, 0,
                             29, 0,   61, 0,   26, 0,  37, 0,   32, 0,  24, 0,  49, 0,  35, 0,  13, 0,  5,  0};
    check_row(x, ex0, 64, "example 0");
    free(x), free(y);
}

// Zoology's paper train set (V=8192, L=64, K=4, N=100000, seed 0): every key and value of every
// example is drawn before any gap, so example 0 depends on N.
TEST(mqar_matches_numpy_v8192_seed0_full_train_set) {
    MqarSpec s = spec(8192, 64, 4, 100000, 0);
    int32_t *x, *y;
    gen(&s, &x, &y);
    CHECK(fnv1a_i32(x, 100000 * 64) == 0xc4879609541cf70aULL, "inputs differ from numpy");
    CHECK(fnv1a_i32(y, 100000 * 64) == 0x38ad0a00b9b0d6f6ULL, "labels differ from numpy");
    int32_t ex0[64] = {583, 4898, 1962, 4671, 1958, 7947, 3194, 6084, 1962};
    ex0[14] = 3194, ex0[48] = 583, ex0[50] = 1958;
    check_row(x, ex0, 64, "example 0");
    const int lab0[4][2] = {{8, 4671}, {14, 6084}, {48, 4898}, {50, 7947}};
    check_labels(y, 64, lab0, 4);
    free(x), free(y);
}

// The docstring example of Zoology's multiquery_ar (V=12, K=2, L=16): keys 2, 4; values 8, 7;
// gaps 4, 1.
TEST(mqar_layout_docstring_example) {
    const int keys[2] = {2, 4}, values[2] = {8, 7}, gaps[2] = {4, 1};
    int32_t x[16], y[16];
    mqar_layout(2, 16, keys, values, gaps, x, y);
    const int32_t want[16] = {2, 8, 4, 7, 0, 0, 4, 0, 0, 0, 0, 0, 2, 0, 0, 0};
    check_row(x, want, 16, "docstring example");
    for (int t = 0; t < 16; t++) CHECK(y[t] == (t == 6 ? 7 : t == 12 ? 8 : MQAR_IGNORE), "label at %d is %d", t, y[t]);
}

// Invariants of one example (inputs x[L], labels y[L]); filler says whether 0s were replaced.
static void check_invariants(const MqarSpec *s, const int32_t *x, const int32_t *y, int filler) {
    int V = s->vocab_size, L = s->seq_len, K = s->kv_pairs, C = 2 * K, half = V / 2;
    for (int i = 0; i < K; i++) {
        CHECK(x[2 * i] >= 1 && x[2 * i] < half, "key %d = %d outside [1, %d)", i, x[2 * i], half);
        CHECK(x[2 * i + 1] >= half && x[2 * i + 1] < V, "value %d = %d", i, x[2 * i + 1]);
        for (int j = 0; j < i; j++) {
            CHECK(x[2 * i] != x[2 * j], "keys %d and %d equal", i, j);
            CHECK(x[2 * i + 1] != x[2 * j + 1], "values %d and %d equal", i, j);
        }
    }
    for (int t = 0; t < C; t++) CHECK(y[t] == MQAR_IGNORE, "label in the context at %d", t);
    int labels = 0, seen[64] = {0};
    for (int t = C; t < L; t++) {
        if (y[t] == MQAR_IGNORE) {
            if (!filler) CHECK(x[t] == 0, "unlabelled query-region token %d at %d", x[t], t);
            else CHECK(x[t] >= 0 && x[t] < V, "filler %d at %d", x[t], t);
            continue;
        }
        labels++;
        CHECK(((t - C) & 1) == 0, "query at odd offset %d", t - C);
        int i = 0;
        while (i < K && x[2 * i] != x[t]) i++;
        CHECK(i < K, "query token %d at %d is not a context key", x[t], t);
        CHECK(y[t] == x[2 * i + 1], "label %d at %d is not key %d's value %d", y[t], t, x[t], x[2 * i + 1]);
        CHECK(!seen[i], "key %d queried twice", x[t]);
        seen[i] = 1;
    }
    CHECK(labels == K, "%d labels, want %d", labels, K);
}

TEST(mqar_layout_invariants) {
    const MqarSpec specs[] = {spec(8192, 64, 4, 2000, 1), spec(300, 128, 8, 2000, 2), spec(65, 64, 16, 2000, 3),
                              spec(9, 8, 2, 2000, 4), spec(1000, 256, 64, 200, 5)};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const MqarSpec *s = &specs[k];
        int32_t *x, *y;
        gen(s, &x, &y);
        for (long n = 0; n < s->n_examples; n++) check_invariants(s, x + n * s->seq_len, y + n * s->seq_len, 0);
        free(x), free(y);
    }
}

// random_filler = 1: same draws, zeros replaced by tokens from our own seeded stream.
TEST(mqar_random_filler) {
    MqarSpec s0 = spec(512, 64, 4, 500, 7), s1 = s0;
    s1.random_filler = 1;
    int32_t *x0, *y0, *x1, *y1, *x2, *y2;
    gen(&s0, &x0, &y0);
    gen(&s1, &x1, &y1);
    gen(&s1, &x2, &y2);
    long replaced = 0, hist[512] = {0};
    for (long i = 0; i < 500 * 64; i++) {
        CHECK(y0[i] == y1[i], "labels changed at %ld", i);
        CHECK(x1[i] == x2[i], "not deterministic at %ld", i);
        if (x0[i] != 0) CHECK(x1[i] == x0[i], "non-filler token changed at %ld", i);
        else replaced += x1[i] != 0, hist[x1[i]]++;
    }
    for (long n = 0; n < 500; n++) check_invariants(&s1, x1 + n * 64, y1 + n * 64, 1);
    CHECK(replaced > 500 * 50, "only %ld filler tokens replaced", replaced);
    int distinct = 0;
    for (int v = 0; v < 512; v++) distinct += hist[v] > 0;
    CHECK(distinct > 500, "filler covers only %d of 512 tokens", distinct);
    free(x0), free(y0), free(x1), free(y1), free(x2), free(y2);
}

TEST(mqar_spec_errors) {
    MqarSpec ok = spec(8192, 64, 4, 10, 0);
    CHECK(mqar_spec_error(&ok) == NULL, "valid spec refused: %s", mqar_spec_error(&ok));
    MqarSpec edge = spec(17, 16, 4, 10, 0);  // V = L + 1, 4K = L
    CHECK(mqar_spec_error(&edge) == NULL, "edge spec refused: %s", mqar_spec_error(&edge));
    struct {
        MqarSpec s;
        const char *word;
    } bad[] = {
        {spec(8192, 63, 4, 10, 0), "even"},          {spec(64, 64, 4, 10, 0), "vocab_size"},
        {spec(8192, 64, 0, 10, 0), "mqar_kv_pairs"}, {spec(8192, 64, 17, 10, 0), "mqar_kv_pairs"},
        {spec(8192, 0, 4, 10, 0), "seq_len"},        {spec(8192, 64, 4, 0, 0), "examples"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *e = mqar_spec_error(&bad[i].s);
        CHECK(e && strstr(e, bad[i].word), "case %zu: got '%s', want a message about %s", i, e ? e : "(null)", bad[i].word);
    }
    const double bad_a[] = {0.0, -0.5, NAN, INFINITY, 2000.0};
    for (size_t i = 0; i < sizeof bad_a / sizeof bad_a[0]; i++) {
        MqarSpec s = ok;
        s.power_a = bad_a[i];
        const char *e = mqar_spec_error(&s);
        CHECK(e && strstr(e, "mqar_power_a"), "power_a = %g: got '%s'", bad_a[i], e ? e : "(null)");
    }
}

static void make_bad_dataset(void *arg) {
    (void)arg;
    MqarSpec s = spec(8192, 63, 4, 10, 0);
    Dataset ds;
    dataset_mqar(&ds, &s);
}

TEST(mqar_bad_spec_exits_2) {
    char err[512];
    int rc = test_fork(make_bad_dataset, NULL, err, sizeof err);
    CHECK(rc == 2, "exit status %d", rc);
    CHECK(strstr(err, "seq_len") && strchr(err, '\n') == strrchr(err, '\n'), "message: %s", err);
}

// --- the splits (data/task.h, docs/mqar.md#splits) -------------------------------------------------

static int in_split(const Dataset *ds, uint64_t h) {
    for (long i = 0; i < ds->n; i++)
        if (dataset_sequence_hash(ds, i) == h) return 1;
    return 0;
}

// On a cell with few distinct sequences (7 keys x 8 values x 3 places) the three seeds draw many
// of the same sequences: validation keeps none that train or test holds, by hash, and says how
// many it left out; test keeps its own (Zoology's) and counts those train holds.
TEST(mqar_validation_is_disjoint_from_train_and_test_by_hash) {
    Config c;
    test_config(&c,
                "task=mqar vocab_size=16 seq_len=8 mqar_kv_pairs=1 mqar_train_examples=300 "
                "mqar_val_examples=100 mqar_test_examples=100");
    Task t;
    task_open(&t, &c, TASK_ALL);
    CHECK(t.has_train && t.has_val && t.has_test);
    CHECK(t.val.n > 0 && t.val.n < 100 && t.val_dropped == 100 - t.val.n, "val %ld dropped %ld", t.val.n, t.val_dropped);
    CHECK(t.test.n == 100 && t.test_in_train > 0, "test %ld in train %ld", t.test.n, t.test_in_train);
    CHECK(t.val.cell_first[0] == 0 && t.val.cell_first[1] == t.val.n);
    for (long i = 0; i < t.val.n; i++) {
        uint64_t h = dataset_sequence_hash(&t.val, i);
        CHECK(!in_split(&t.train, h) && !in_split(&t.test, h), "validation sequence %ld is in train or test", i);
        // the labels moved with their inputs: the one label is the value after the key
        int query = -1;
        for (int p = 2; p < 8; p++)
            if (t.val.labels[i * 8 + p] >= 0) query = p;
        CHECK(query > 0 && t.val.inputs[i * 8 + query] == t.val.inputs[i * 8] &&
              t.val.labels[i * 8 + query] == t.val.inputs[i * 8 + 1]);
    }
    // the same validation set whichever splits are asked for (./evaluate asks for val alone)
    Task v;
    task_open(&v, &c, TASK_VAL);
    CHECK(!v.has_train && !v.has_test && v.val.n == t.val.n &&
          !memcmp(v.val.inputs, t.val.inputs, sizeof(int32_t) * (size_t)t.val.n * 8));
    task_close(&v);
    task_close(&t);
    // the default cell draws no sequence twice: nothing is left out
    config_free(&c);
    test_config(&c, "task=mqar mqar_train_examples=20000 mqar_val_examples=1000 mqar_test_examples=1000");
    task_open(&t, &c, TASK_ALL);
    CHECK(t.val.n == 1000 && t.val_dropped == 0 && t.test_in_train == 0);
    task_close(&t);
    config_free(&c);
}

// ./train on the config `text` (written to `name`.conf) refuses in one line holding `message`, exit 2.
static void check_train_refuses(const char *name, const char *text, const char *message) {
    char file[64];
    snprintf(file, sizeof file, "%s.conf", name);
    const char *conf = test_write_file(file, text);
    char out[2048];
    int st = test_run(out, sizeof out, "./train %s out_dir=%s/%s_run 2>&1", conf, test_tmpdir(), name);
    CHECK(st == 2 && strstr(out, message) && strchr(out, '\n') == strrchr(out, '\n'), "exit %d: %s", st, out);
}

// A cell where every validation sequence is also a training one: exit 2, naming the key.
TEST(mqar_validation_with_nothing_left_exits_2) {
    check_train_refuses("allseen",
                        "vocab_size = 8\nseq_len = 4\nmqar_kv_pairs = 1\nmqar_train_examples = 3000\n"
                        "mqar_val_examples = 20\nmqar_test_examples = 20\nd_model = 8\nsteps = 1\n",
                        "mqar_val_examples: all 20 validation sequences also occur in train or test");
}

// The same for one cell of a mixture (its 1-pair, 4-token sequences are few and all drawn in
// training) while the other keeps its validation sequences: exit 2, naming the key's line and the
// cell.
TEST(mqar_validation_cell_with_nothing_left_exits_2) {
    check_train_refuses("cellseen",
                        "vocab_size = 20\nseq_len = 16\nmqar_cells = 1x4,2x16\nmqar_train_examples = 6000\n"
                        "mqar_val_examples = 20\nmqar_test_examples = 20\nd_model = 8\nsteps = 1\n",
                        "cellseen.conf:5: mqar_val_examples: every validation sequence of cell 1x4 also occurs");
}
