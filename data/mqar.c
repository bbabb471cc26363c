// MQAR generator: a C transcription of zoology's multiquery_ar (numpy legacy RandomState), in the
// exact order in which it consumes the MT19937 stream (docs/mqar.md#the-generator):
//   1. keys of every example (a full Fisher-Yates shuffle of the key vocabulary per example),
//   2. values of every example (likewise over the value vocabulary),
//   3. query gaps of every example (legacy choice(replace=False, p) with a power-law p),
// then the deterministic layout. Everything is float64 and branch-for-branch numpy's, so the result
// is token-identical to numpy whatever the build's float type.
#include "data/mqar.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/progress.h"
#include "core/rng.h"
#include "data/mt19937.h"

// Stream id for the random filler RNG: seed_mix(seed, this). Any fixed constant would do.
#define MQAR_FILLER_STREAM 0x6d716172ULL  // "mqar"

// numpy's pairwise_sum for float64 (what p.sum() computes): blocks of up to 128 summed with eight
// strided accumulators, larger arrays split in two at a multiple of 8.
static double pairwise_sum(const double *a, long n) {
    if (n < 8) {
        double res = 0.;
        for (long i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++) r[j] = a[j];
        long i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    long n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

const char *mqar_spec_error(const MqarSpec *s) {
    if (s->seq_len < 2) return "seq_len must be at least 2";
    if (s->seq_len % 2) return "seq_len must be even for MQAR";
    if (s->kv_pairs < 1) return "mqar_kv_pairs must be at least 1";
    if (s->kv_pairs > s->seq_len / 4) return "mqar_kv_pairs must be at most seq_len/4 (4*K <= L)";
    if (s->vocab_size <= s->seq_len) return "vocab_size must be greater than seq_len for MQAR";
    if (!(s->power_a > 0) || !isfinite(s->power_a)) return "mqar_power_a must be a positive number";
    // numpy would refuse non-finite or non-positive probabilities; catch them here instead.
    int space = (s->seq_len - 2 * s->kv_pairs) / 2;
    double *w = malloc((size_t)space * sizeof *w);
    if (!w) return "out of memory checking mqar_power_a";
    int bad = 0;
    for (int k = 0; k < space; k++) {
        w[k] = s->power_a * pow((double)(k + 1), s->power_a - 1.0);
        bad |= !(w[k] > 0) || !isfinite(w[k]);
    }
    bad |= !isfinite(pairwise_sum(w, space));
    free(w);
    if (bad) return "mqar_power_a is out of range (the gap weights underflow or overflow)";
    if (s->n_examples < 1) return "the number of MQAR examples must be at least 1";
    return NULL;
}

// np.random.choice(pop, size=K, replace=False) without p: a Fisher-Yates shuffle of all P indices
// (legacy permutation), keeping the first K. arr [P] is scratch; out[K] gets offset + arr[i].
static void choice_no_replace(Mt19937 *mt, int *arr, int P, int K, int offset, int *out) {
    for (int i = 0; i < P; i++) arr[i] = i;
    mt_legacy_shuffle(mt, arr, (uint32_t)P);
    for (int i = 0; i < K; i++) out[i] = offset + arr[i];
}

// Legacy choice(space, size=K, replace=False, p=p): rounds of uniform draws through the cdf of p
// with already-found indices zeroed, keeping first occurrences, until K distinct indices exist.
// pw [space], cdf [space], u [K] are scratch.
static void choice_p_no_replace(Mt19937 *mt, const double *p, int space, int K, double *pw, double *cdf, double *u,
                                int *found) {
    memcpy(pw, p, (size_t)space * sizeof *pw);
    int nf = 0;
    while (nf < K) {
        int r = K - nf;
        for (int i = 0; i < r; i++) u[i] = mt_genrand_res53(mt);  // x = self.rand(size - n_uniq)
        for (int i = 0; i < nf; i++) pw[found[i]] = 0.0;          // p[found] = 0
        double c = 0.0;                                           // cdf = cumsum(p), sequential
        for (int i = 0; i < space; i++) cdf[i] = c += pw[i];
        double last = cdf[space - 1];  // cdf /= cdf[-1]
        for (int i = 0; i < space; i++) cdf[i] /= last;
        int round_start = nf;
        for (int t = 0; t < r; t++) {
            int lo = 0, hi = space;  // searchsorted(side='right'): first i with cdf[i] > u
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (cdf[mid] <= u[t]) lo = mid + 1;
                else hi = mid;
            }
            // np.unique(return_index) + sort = this round's values in first-occurrence order
            int dup = 0;
            for (int i = round_start; i < nf; i++) dup |= found[i] == lo;
            if (!dup) found[nf++] = lo;
        }
    }
}

void mqar_layout(int K, int L, const int *keys, const int *values, const int *gaps, int32_t *x, int32_t *y) {
    int C = 2 * K;
    for (int t = 0; t < L; t++) x[t] = 0, y[t] = MQAR_IGNORE;
    for (int i = 0; i < K; i++) {
        x[2 * i] = keys[i];
        x[2 * i + 1] = values[i];
        x[C + 2 * gaps[i]] = keys[i];    // the query: key i again
        y[C + 2 * gaps[i]] = values[i];  // its label: predict the value as the next token
    }
}

// A long generation reports itself: numpy's draw without replacement permutes the whole half of the
// vocabulary for every example, so a large vocabulary takes minutes. After 3 s one line on stdout
// (logs included) with the estimate, then a live line on a terminal.
typedef struct {
    const MqarSpec *s;
    double t0, shown;
    int noted;
} GenProgress;

static void gen_progress(GenProgress *g, long done, long total) {
    // every example asks the clock (one call beside an example's permutation): at a vocabulary of
    // 16777216 an example takes 0.5 s, so asking every 64th said it first after 37 s
    if (progress_stopped()) die("interrupted while generating MQAR data (signal %d)", progress_stopped());
    double el = now_seconds() - g->t0;
    if (el < 3 || done == 0) return;
    if (g->noted && el - g->shown < 0.5) return;
    g->shown = el;
    char left[32];
    format_duration(left, sizeof left, el * (double)(total - done) / (double)done);
    if (!g->noted) {
        g->noted = 1;
        progress_break();
        printf("generating MQAR data: %ld examples of %d pairs in %d tokens over a vocabulary of %d (about %s more; "
               "each example permutes half the vocabulary, as numpy's draw does)\n",
               g->s->n_examples, g->s->kv_pairs, g->s->seq_len, g->s->vocab_size, left);
        fflush(stdout);
    }
    progress_line("generating MQAR data: %.0f%%, %s left", 100.0 * (double)done / (double)total, left);
}

void mqar_generate(const MqarSpec *s, int32_t *inputs, int32_t *labels) {
    const char *err = mqar_spec_error(s);
    if (err) die_input("mqar: %s", err);
    int V = s->vocab_size, L = s->seq_len, K = s->kv_pairs;
    long N = s->n_examples;
    int half = V / 2, space = (L - 2 * K) / 2;
    // draws of all examples first, as numpy does: keys, values, gaps [N, K]
    int *keys = mallocCheck((size_t)N * K * sizeof(int));
    int *vals = mallocCheck((size_t)N * K * sizeof(int));
    int *gaps = mallocCheck((size_t)N * K * sizeof(int));
    int *arr = mallocCheck((size_t)(V - half) * sizeof(int));
    Mt19937 *mt = mallocCheck(sizeof *mt);
    mt_init_genrand(mt, s->seed);

    GenProgress prog = {s, now_seconds(), 0, 0};
    for (long n = 0; n < N; n++) {
        choice_no_replace(mt, arr, half - 1, K, 1, keys + n * K);
        gen_progress(&prog, n, 2 * N);
    }
    for (long n = 0; n < N; n++) {
        choice_no_replace(mt, arr, V - half, K, half, vals + n * K);
        gen_progress(&prog, N + n, 2 * N);
    }
    progress_break();

    // p = a * arange(1, space+1) ** (a-1); p = p / p.sum()
    double *p = mallocCheck((size_t)space * 3 * sizeof(double));
    double *pw = p + space, *cdf = pw + space;
    double *u = mallocCheck((size_t)K * sizeof(double));
    for (int k = 0; k < space; k++) p[k] = s->power_a * pow((double)(k + 1), s->power_a - 1.0);
    double sum = pairwise_sum(p, space);
    for (int k = 0; k < space; k++) p[k] = p[k] / sum;
    for (long n = 0; n < N; n++) choice_p_no_replace(mt, p, space, K, pw, cdf, u, gaps + n * K);

    for (long n = 0; n < N; n++)
        mqar_layout(K, L, keys + n * K, vals + n * K, gaps + n * K, inputs + n * L, labels + n * L);

    // Zoology's random_non_queries replaces every 0 input by torch.randint(V); torch's generator
    // state cannot be reproduced here, so this uses our own stream: same seed, same filler, but not
    // zoology's filler tokens.
    if (s->random_filler) {
        Rng rng;
        rng_seed(&rng, seed_mix(s->seed, MQAR_FILLER_STREAM));
        for (long i = 0; i < N * L; i++)
            if (inputs[i] == 0) inputs[i] = (int32_t)rng_below(&rng, (uint64_t)V);
    }
    free(keys), free(vals), free(gaps), free(arr), free(mt), free(p), free(u);
}

// 1 when text holds an empty entry: nothing but spaces between two commas, before the first or
// after the last ("4x16,,8x32", "4x16,").
static int has_empty_entry(const char *text) {
    if (!strchr(text, ',')) return 0;
    for (const char *p = text;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (strspn(p, " \t") >= len) return 1;
        if (!comma) return 0;
        p = comma + 1;
    }
}

// A run of digits as a number, capped at cap + 1 (so that no length of digits overflows).
static long capped_number(const char *d, int n, long cap) {
    long v = 0;
    for (int i = 0; i < n; i++)
        if ((v = v * 10 + (d[i] - '0')) > cap) return cap + 1;
    return v;
}

int mqar_cells_parse(const char *text, MqarCell *cells, int max, char *err, size_t errlen) {
    if (has_empty_entry(text)) {
        snprintf(err, errlen,
                 "an empty entry in '%.60s' (two commas in a row, or a comma first or last): expected "
                 "PAIRSxLENGTH entries such as 4x64, 8x128",
                 text);
        return -1;
    }
    int n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) break;
        const char *start = p;
        while (*p && *p != ',' && *p != ' ' && *p != '\t') p++;
        int len = (int)(p - start);
        char entry[64];
        snprintf(entry, sizeof entry, "%.*s", len < 60 ? len : 60, start);
        // digits, one 'x', digits: nothing else
        int xs = 0, others = 0, x_at = -1;
        for (int i = 0; i < len; i++) {
            if (entry[i] == 'x' || entry[i] == 'X') xs++, x_at = i;
            else if (!isdigit((unsigned char)entry[i])) others++;
        }
        if (len > 60 || xs != 1 || others || x_at == 0 || x_at == len - 1) {
            snprintf(err, errlen, "entry '%s': expected PAIRSxLENGTH such as 8x128", entry);
            return -1;
        }
        long k = capped_number(entry, x_at, MQAR_MAX_CELL),
             l = capped_number(entry + x_at + 1, len - x_at - 1, MQAR_MAX_CELL);
        if (k > MQAR_MAX_CELL || l > MQAR_MAX_CELL) {
            snprintf(err, errlen, "entry '%s': %s is too large (at most %d)", entry,
                     k > MQAR_MAX_CELL ? "the pair count" : "the length", MQAR_MAX_CELL);
            return -1;
        }
        if (k < 1 || l < 2) {
            snprintf(err, errlen, "entry '%s': expected at least 1 pair and a length of at least 2", entry);
            return -1;
        }
        if (n == max) {
            snprintf(err, errlen, "more than %d cells", max);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (cells[i].kv_pairs == k && cells[i].seq_len == l) {
                snprintf(err, errlen, "entry '%s' is listed twice", entry);
                return -1;
            }
        cells[n++] = (MqarCell){(int)k, (int)l};
    }
    if (n == 0) {
        snprintf(err, errlen, "expected one or more PAIRSxLENGTH entries such as 4x64, 8x128");
        return -1;
    }
    return n;
}

void mqar_cell_name(MqarCell c, char *buf, size_t n) { snprintf(buf, n, "kv%d_L%d", c.kv_pairs, c.seq_len); }

int mqar_value_pos(const int *inputs, int i, int target) {
    for (int j = 0; j + 1 < i; j++)
        if (inputs[j] == inputs[i] && inputs[j + 1] == target) return j + 1;
    return -1;
}
