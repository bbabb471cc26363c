#include "eval/val_eval.h"

#include <stdlib.h>

#include "core/io.h"

HeadStats val_eval(Model *m, const Dataset *val, int B, int T, long eval_batches) {
    long n = eval_batches > 0 && eval_batches * B < val->n ? eval_batches * B : val->n;
    int *inputs = mallocCheck(sizeof(int) * (size_t)B * T), *targets = mallocCheck(sizeof(int) * (size_t)B * T);
    HeadStats total = {0, 0, 0};
    for (long i0 = 0; i0 < n; i0 += B) {
        int b = (int)(n - i0 < B ? n - i0 : B);
        for (int r = 0; r < b; r++) dataset_get(val, i0 + r, inputs + (size_t)r * T, targets + (size_t)r * T);
        HeadStats s = model_forward(m, inputs, targets, b, T, 0);
        total.loss_sum += s.loss_sum;
        total.n_counted += s.n_counted;
        total.n_correct += s.n_correct;
    }
    free(inputs);
    free(targets);
    return total;
}

double val_loss(const HeadStats *s) { return s->n_counted ? s->loss_sum / (double)s->n_counted : 0; }

double val_acc(const HeadStats *s) { return s->n_counted ? (double)s->n_correct / (double)s->n_counted : 0; }
