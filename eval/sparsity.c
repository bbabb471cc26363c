#include "eval/sparsity.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/json.h"

// --- one row -------------------------------------------------------------------------------------

int sparsity_row(const real *a, int n, RowStats *st) {
    double l1 = 0, l2 = 0, mx = 0, neg = 0;
    for (int j = 0; j < n; j++) {
        double v = (double)a[j], av = fabs(v);
        l1 += av;
        l2 += v * v;
        if (av > mx) mx = av;
        if (v < 0) neg += av;
    }
    if (l1 == 0) return 0;
    double ent = 0;
    for (int j = 0; j < n; j++) {
        double w = fabs((double)a[j]) / l1;
        if (w > 0) ent -= w * log(w);
    }
    st->S = (l1 / n) / sqrt(l2 / n);
    st->entropy = n > 1 ? ent / log((double)n) : 1;  // one weight: flat and one-hot at once, like S = 1
    st->max_weight = mx / l1;
    st->neg_mass = neg / l1;
    return 1;
}

// --- closed forms ---------------------------------------------------------------------------------

double theory_decay_S(double lambda, int n) {
    if (n <= 1 || lambda == 1) return 1;
    double ln = pow(lambda, n);
    return sqrt((1 - ln) / (n * (1 - lambda)) * (1 + lambda) / (1 + ln));
}

double theory_exp_S(double sigma2, double q2) { return exp(-sigma2 * q2 / 2); }

void theory_exp_rows(const real *q, const real *k, int T, int K, double *pred) {
    double *mean = callocCheck((size_t)K, sizeof(double));
    double m2 = 0;  // sum over dimensions of the prefix's sum of squared deviations (Welford)
    for (int i = 0; i < T; i++) {
        const real *ki = k + (size_t)i * K, *qi = q + (size_t)i * K;
        double n = i + 1, q2 = 0;
        for (int d = 0; d < K; d++) {
            double x = (double)ki[d], delta = x - mean[d];
            mean[d] += delta / n;
            m2 += delta * (x - mean[d]);
            q2 += (double)qi[d] * (double)qi[d];
        }
        pred[i] = theory_exp_S(m2 / n / K, q2);
    }
    free(mean);
}

void theory_linear_rows(const real *q, const real *k, int T, int K, double *pred) {
    double *mean = callocCheck((size_t)K, sizeof(double));
    double *m2 = callocCheck((size_t)K * K, sizeof(double));  // co-moment matrix of the prefix
    double *delta = mallocCheck(sizeof(double) * K);
    for (int i = 0; i < T; i++) {
        const real *ki = k + (size_t)i * K, *qi = q + (size_t)i * K;
        double n = i + 1;
        for (int d = 0; d < K; d++) delta[d] = (double)ki[d] - mean[d];
        for (int d = 0; d < K; d++) mean[d] += delta[d] / n;
        // C += (x - mean_old)(x - mean_new)^T, symmetric
        for (int d = 0; d < K; d++) {
            double after = (double)ki[d] - mean[d];
            for (int e = 0; e < K; e++) m2[(size_t)d * K + e] += delta[e] * after;
        }
        double qmu = 0, qSq = 0;
        for (int d = 0; d < K; d++) {
            double row = 0;
            for (int e = 0; e < K; e++) row += m2[(size_t)d * K + e] * (double)qi[e];
            qSq += (double)qi[d] * row;
            qmu += (double)qi[d] * mean[d];
        }
        qSq /= n;
        if (qSq < 0) qSq = 0;  // rounding of a (near) constant prefix
        pred[i] = qmu != 0 ? 1 / sqrt(1 + qSq / (qmu * qmu)) : NAN;
    }
    free(mean);
    free(m2);
    free(delta);
}

const char *theory_name(Theory t) {
    switch (t) {
    case THEORY_EXP: return "exp";
    case THEORY_LINEAR: return "linear";
    case THEORY_DECAY: return "decay";
    default: return "none";
    }
}

// --- the pass over the validation set ----------------------------------------------------------

// Sums of one (sequence, map): measured in parallel, added into the heads in a fixed order.
typedef struct {
    long rows, rows_recall, rows_pred, rows_pred_recall;
    double S, S_recall, entropy, max_weight, neg_mass, onehot, onehot_recall;
    double pred, meas_pred, pred_recall, meas_pred_recall;
} MapSums;

static void sums_add(MapSums *a, const MapSums *b) {
    a->rows += b->rows;
    a->rows_recall += b->rows_recall;
    a->rows_pred += b->rows_pred;
    a->rows_pred_recall += b->rows_pred_recall;
    a->S += b->S;
    a->S_recall += b->S_recall;
    a->entropy += b->entropy;
    a->max_weight += b->max_weight;
    a->neg_mass += b->neg_mass;
    a->onehot += b->onehot;
    a->onehot_recall += b->onehot_recall;
    a->pred += b->pred;
    a->meas_pred += b->meas_pred;
    a->pred_recall += b->pred_recall;
    a->meas_pred_recall += b->meas_pred_recall;
}

typedef struct {  // per-thread scratch
    real *a;      // [T*T] one map
    real *q, *k;  // [T*4C] theory queries and keys
    double *pred; // [T]
} Scratch;

// Measures map mi of batch row b over its selected rows (sel[T], NULL = all).
static void measure_map(const Model *m, int l, const MixerIO *io, int b, int mi, const unsigned char *sel,
                        const int *targets, Scratch *s, MapSums *out) {
    const MixerKind *mk = m->mixer[l];
    const void *st = m->mixer_state[l];
    int T = io->T;
    memset(out, 0, sizeof *out);
    mk->attention(st, io, b, mi, s->a);
    int have_pred = 0;
    if ((mk->theory == THEORY_EXP || mk->theory == THEORY_LINEAR) && mk->attention_qk) {
        int K = mk->attention_qk(st, io, b, mi, s->q, s->k);
        if (mk->theory == THEORY_EXP) theory_exp_rows(s->q, s->k, T, K, s->pred);
        else theory_linear_rows(s->q, s->k, T, K, s->pred);
        have_pred = 1;
    } else if (mk->theory == THEORY_DECAY && mk->decay_rate) {
        double lambda = mk->decay_rate(st, mi);
        for (int i = 0; i < T; i++) s->pred[i] = theory_decay_S(lambda, i + 1);
        have_pred = 1;
    }
    for (int i = 0; i < T; i++) {
        if (sel && !sel[i]) continue;
        RowStats rs;
        if (!sparsity_row(s->a + (size_t)i * T, i + 1, &rs)) continue;
        int recall = targets[(size_t)b * T + i] >= 0;
        out->rows++;
        out->S += rs.S;
        out->entropy += rs.entropy;
        out->max_weight += rs.max_weight;
        out->neg_mass += rs.neg_mass;
        out->onehot += 1 / sqrt(i + 1.0);
        if (recall) {
            out->rows_recall++;
            out->S_recall += rs.S;
            out->onehot_recall += 1 / sqrt(i + 1.0);
        }
        if (have_pred && isfinite(s->pred[i])) {
            out->rows_pred++;
            out->pred += s->pred[i];
            out->meas_pred += rs.S;
            if (recall) {
                out->rows_pred_recall++;
                out->pred_recall += s->pred[i];
                out->meas_pred_recall += rs.S;
            }
        }
    }
}

void sparsity_result_free(SparsityResult *r) {
    free(r->heads);
    memset(r, 0, sizeof *r);
}

int sparsity_supported(const Model *m) {
    for (int l = 0; l < m->s.L; l++)
        if (!m->mixer[l]->attention || !m->mixer[l]->n_maps) return 0;
    return 1;
}

void sparsity_eval(Model *m, const Dataset *val, int B, int T, long eval_batches, long sparsity_rows,
                   SparsityResult *out) {
    int L = m->s.L, H = m->s.H, C = m->s.C;
    if (!sparsity_supported(m)) die("sparsity: a layer's mixer has no attention extractor");
    // Layers of a hybrid stack have different map counts (a head, or every channel for Mamba).
    int n_maps_l[MAX_LAYERS], n_maps_max = 0;
    for (int l = 0; l < L; l++) {
        const MixerKind *mk = m->mixer[l];
        n_maps_l[l] = mk->n_maps(m->mixer_state[l]);
        if (n_maps_l[l] % H) die("internal error: mixer '%s' has %d maps for %d heads", mk->name, n_maps_l[l], H);
        if (n_maps_l[l] > n_maps_max) n_maps_max = n_maps_l[l];
    }
    long n_seq = eval_batches > 0 && eval_batches * B < val->n ? eval_batches * B : val->n;
    unsigned long long R = (unsigned long long)n_seq * (unsigned long long)T;
    unsigned long long N = sparsity_rows > 0 && (unsigned long long)sparsity_rows < R ? (unsigned long long)sparsity_rows : 0;

    free(out->heads);
    memset(out, 0, sizeof *out);
    out->L = L;
    out->H = H;
    for (int l = 0; l < L; l++) {
        out->theory[l] = m->mixer[l]->theory;
        out->mixer[l] = m->mixer[l]->name;
    }
    out->hybrid = model_is_hybrid(m);
    out->heads = callocCheck((size_t)L * H, sizeof(HeadSparsity));
    MapSums *head_sums = callocCheck((size_t)L * H, sizeof(MapSums));
    MapSums *map_sums = mallocCheck(sizeof(MapSums) * (size_t)B * n_maps_max);
    int *inputs = mallocCheck(sizeof(int) * (size_t)B * T), *targets = mallocCheck(sizeof(int) * (size_t)B * T);
    unsigned char *sel = mallocCheck((size_t)B * T);
    int *seq_used = mallocCheck(sizeof(int) * (size_t)B);
    int n_threads = omp_get_max_threads();
    Scratch *scr = mallocCheck(sizeof(Scratch) * n_threads);
    for (int t = 0; t < n_threads; t++) {
        scr[t].a = mallocCheck(sizeof(real) * (size_t)T * T);
        scr[t].q = mallocCheck(sizeof(real) * (size_t)T * 4 * C);
        scr[t].k = mallocCheck(sizeof(real) * (size_t)T * 4 * C);
        scr[t].pred = mallocCheck(sizeof(double) * T);
    }

    unsigned long long next_k = 0;  // the next chosen row is floor(next_k * R / N)
    for (long i0 = 0; i0 < n_seq; i0 += B) {
        int b = (int)(n_seq - i0 < B ? n_seq - i0 : B);
        int any = 0;
        for (int r = 0; r < b; r++) {
            seq_used[r] = 0;
            for (int t = 0; t < T; t++) {
                unsigned long long flat = (unsigned long long)(i0 + r) * T + t;
                int chosen = 1;
                if (N) {
                    chosen = next_k < N && (unsigned long long)((unsigned __int128)next_k * R / N) == flat;
                    if (chosen) next_k++;
                }
                sel[r * T + t] = (unsigned char)chosen;
                seq_used[r] |= chosen;
            }
            any |= seq_used[r];
        }
        if (!any) continue;
        for (int r = 0; r < b; r++) dataset_get(val, i0 + r, inputs + (size_t)r * T, targets + (size_t)r * T);
        HeadStats hs = model_forward(m, inputs, targets, b, T, 0);
        out->stats.loss_sum += hs.loss_sum;
        out->stats.n_counted += hs.n_counted;
        out->stats.n_correct += hs.n_correct;
        out->sequences += b;
        for (int l = 0; l < L; l++) {
            MixerIO io = model_mixer_io(m, l);
            int n_maps = n_maps_l[l], per_head = n_maps / H;
#pragma omp parallel for schedule(dynamic, 1)
            for (int task = 0; task < b * n_maps; task++) {
                int r = task / n_maps, mi = task % n_maps;
                if (!seq_used[r]) {
                    memset(&map_sums[task], 0, sizeof(MapSums));
                    continue;
                }
                measure_map(m, l, &io, r, mi, N ? sel + (size_t)r * T : NULL, targets,
                            &scr[omp_get_thread_num()], &map_sums[task]);
            }
            for (int task = 0; task < b * n_maps; task++)
                sums_add(&head_sums[l * H + (task % n_maps) / per_head], &map_sums[task]);
        }
    }

    for (int i = 0; i < L * H; i++) {
        const MapSums *s = &head_sums[i];
        HeadSparsity *h = &out->heads[i];
        int per_head = n_maps_l[i / H] / H;
        h->rows = s->rows / per_head;
        h->rows_recall = s->rows_recall / per_head;
        h->rows_pred = s->rows_pred / per_head;
        h->S = s->rows ? s->S / s->rows : NAN;
        h->entropy = s->rows ? s->entropy / s->rows : NAN;
        h->max_weight = s->rows ? s->max_weight / s->rows : NAN;
        h->neg_mass = s->rows ? s->neg_mass / s->rows : NAN;
        h->S_recall = s->rows_recall ? s->S_recall / s->rows_recall : NAN;
        h->S_onehot = s->rows ? s->onehot / s->rows : NAN;
        h->S_recall_onehot = s->rows_recall ? s->onehot_recall / s->rows_recall : NAN;
        h->S_pred = s->rows_pred ? s->pred / s->rows_pred : NAN;
        h->S_meas_pred = s->rows_pred ? s->meas_pred / s->rows_pred : NAN;
        h->S_recall_pred = s->rows_pred_recall ? s->pred_recall / s->rows_pred_recall : NAN;
        h->S_recall_meas_pred = s->rows_pred_recall ? s->meas_pred_recall / s->rows_pred_recall : NAN;
    }
    for (int t = 0; t < n_threads; t++) {
        free(scr[t].a);
        free(scr[t].q);
        free(scr[t].k);
        free(scr[t].pred);
    }
    free(scr);
    free(seq_used);
    free(sel);
    free(inputs);
    free(targets);
    free(map_sums);
    free(head_sums);
}

// --- records ---------------------------------------------------------------------------------------

static void put_num(FILE *f, const char *key, double v) {
    if (isfinite(v)) fprintf(f, ",\"%s\":%.9g", key, v);
}

void sparsity_write_records(FILE *f, const char *type, long step, const char *mixer, const SparsityResult *r) {
    for (int l = 0; l < r->L; l++)
        for (int hd = 0; hd < r->H; hd++) {
            const HeadSparsity *h = &r->heads[l * r->H + hd];
            fputc('{', f);
            if (type) fprintf(f, "\"type\":\"%s\",", type);
            fprintf(f, "\"step\":%ld,\"layer\":%d,\"head\":%d,\"mixer\":", step, l, hd);
            json_write_string(f, r->hybrid ? r->mixer[l] : mixer);  // a hybrid's layer: its own
            if (isfinite(h->S)) fprintf(f, ",\"S\":%.9g", h->S);
            else fputs(",\"S\":null", f);
            if (isfinite(h->S_recall)) fprintf(f, ",\"S_recall\":%.9g", h->S_recall);
            else fputs(",\"S_recall\":null", f);
            fprintf(f, ",\"rows\":%ld,\"rows_recall\":%ld", h->rows, h->rows_recall);
            put_num(f, "entropy", h->entropy);
            put_num(f, "max_weight", h->max_weight);
            put_num(f, "neg_mass", h->neg_mass);
            put_num(f, "S_onehot", h->S_onehot);
            put_num(f, "S_recall_onehot", h->S_recall_onehot);
            fprintf(f, ",\"theory\":\"%s\"", theory_name(r->theory[l]));
            if (h->rows_pred > 0) {
                put_num(f, "S_pred", h->S_pred);
                put_num(f, "S_pred_ratio", h->S_meas_pred / h->S_pred);
                put_num(f, "S_recall_pred", h->S_recall_pred);
                put_num(f, "S_recall_pred_ratio", h->S_recall_meas_pred / h->S_recall_pred);
            }
            fputs("}\n", f);
        }
}

void sparsity_write_jsonl(FILE *f, long step, const char *mixer, const SparsityResult *r) {
    sparsity_write_records(f, NULL, step, mixer, r);
}
