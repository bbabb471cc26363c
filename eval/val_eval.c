#include "eval/val_eval.h"

#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/progress.h"

long val_cell_range(const Dataset *val, int c, int B, long eval_batches, long *first) {
    long lo = val->n_cells ? val->cell_first[c] : 0, n = val->n_cells ? val->cell_first[c + 1] - lo : val->n;
    *first = lo;
    return eval_batches > 0 && eval_batches * B < n ? eval_batches * B : n;
}

void val_stats_add(ValStats *v, int c, const HeadStats *s) {
    v->all.loss_sum += s->loss_sum;
    v->all.n_counted += s->n_counted;
    v->all.n_correct += s->n_correct;
    if (!v->n_cells) return;
    v->cell[c].loss_sum += s->loss_sum;
    v->cell[c].n_counted += s->n_counted;
    v->cell[c].n_correct += s->n_correct;
}

ValStats val_eval(Model *m, const Dataset *val, int B, int T, long eval_batches) {
    return val_eval_examples(m, val, B, T, eval_batches, NULL);
}

ValStats val_eval_examples(Model *m, const Dataset *val, int B, int T, long eval_batches, ExampleCounts *ex) {
    int *inputs = mallocCheck(sizeof(int) * (size_t)B * T), *targets = mallocCheck(sizeof(int) * (size_t)B * T);
    ValStats v;
    memset(&v, 0, sizeof v);
    v.n_cells = val->n_cells;
    memcpy(v.cells, val->cells, sizeof v.cells);
    for (int c = 0; c < (val->n_cells ? val->n_cells : 1); c++) {
        long first, n = val_cell_range(val, c, B, eval_batches, &first);
        int L = val->n_cells ? val->cells[c].seq_len : T;            // a cell runs at its own length
        for (long i0 = 0; i0 < n && !progress_stopped(); i0 += B) {  // a signal: the caller drops the pass
            int b = (int)(n - i0 < B ? n - i0 : B);
            for (int r = 0; r < b; r++)
                dataset_get_prefix(val, first + i0 + r, L, inputs + (size_t)r * L, targets + (size_t)r * L);
            HeadStats s = model_forward(m, inputs, targets, b, L, 0);
            val_stats_add(&v, c, &s);
            if (ex) examples_add_forward(ex, m, b, L, c);
        }
    }
    free(inputs);
    free(targets);
    return v;
}

double val_loss(const ValStats *v) { return v->all.n_counted ? v->all.loss_sum / (double)v->all.n_counted : 0; }

double head_acc(const HeadStats *s) { return s->n_counted ? (double)s->n_correct / (double)s->n_counted : 0; }

double val_acc(const ValStats *v) {
    if (v->n_cells <= 1) return head_acc(&v->all);
    double sum = 0;
    for (int c = 0; c < v->n_cells; c++) sum += head_acc(&v->cell[c]);
    return sum / v->n_cells;
}

void val_write_record(FILE *f, long step, const ValStats *v, RunlogEval *rec) {
    char names[MQAR_MAX_CELLS][32];
    const char *name_ptr[MQAR_MAX_CELLS];
    double acc[MQAR_MAX_CELLS];
    int n = v->n_cells > 1 ? v->n_cells : 0;  // one cell: its accuracy is the record's own
    for (int c = 0; c < n; c++) {
        mqar_cell_name(v->cells[c], names[c], sizeof names[c]);
        name_ptr[c] = names[c];
        acc[c] = head_acc(&v->cell[c]);
    }
    rec->step = step;
    rec->loss = val_loss(v);
    rec->acc = val_acc(v);
    rec->n_cells = n;
    rec->cell_names = name_ptr;
    rec->cell_acc = acc;
    runlog_write_eval(f, rec);
    rec->cell_names = NULL, rec->cell_acc = NULL;  // they lived on this stack
}

void val_write_record_examples(FILE *f, long step, const ValStats *v, const ExampleCounts *ex, RunlogEval *rec) {
    size_t *q = mallocCheck(sizeof(size_t) * (size_t)(ex->n + 1)), *c = mallocCheck(sizeof(size_t) * (size_t)(ex->n + 1));
    size_t by_cell[MQAR_MAX_CELLS] = {0};
    for (long i = 0; i < ex->n; i++) {
        q[i] = (size_t)ex->queries[i], c[i] = (size_t)ex->correct[i];
        if (ex->cell[i] >= 0 && ex->cell[i] < MQAR_MAX_CELLS) by_cell[ex->cell[i]]++;
    }
    rec->examples = ex->n;
    examples_interval(ex, v->n_cells, &rec->acc_lo, &rec->acc_hi);
    rec->example_queries = q, rec->example_correct = c;
    rec->examples_by_cell = v->n_cells > 1 ? by_cell : NULL;
    val_write_record(f, step, v, rec);
    rec->examples = 0, rec->example_queries = rec->example_correct = rec->examples_by_cell = NULL;
    free(q), free(c);
}

void val_format_cells(char *buf, size_t n, const ValStats *v) {
    size_t k = 0;
    buf[0] = 0;
    for (int c = 0; v->n_cells > 1 && c < v->n_cells && k + 40 < n; c++) {
        char name[32];
        mqar_cell_name(v->cells[c], name, sizeof name);
        k += (size_t)snprintf(buf + k, n - k, "%s%s %.3f", c ? " | " : "", name, head_acc(&v->cell[c]));
    }
}
