// One training step (step.h).
#include "trainer/step.h"

#include <math.h>

#include "core/io.h"

int train_step(Model *m, Optimizer *opt, const int32_t *inputs, const int32_t *targets, int B, int T, double lr,
               double clip, StepStats *r) {
    double t0 = now_seconds();
    model_zero_grad(m);  // backward accumulates into the gradient arena
    HeadStats s = model_forward(m, inputs, targets, B, T, 1);
    double t1 = now_seconds();
    model_backward(m);
    double t2 = now_seconds();
    r->lr = lr;
    r->loss = s.n_counted ? s.loss_sum / (double)s.n_counted : 0;
    r->acc = s.n_counted ? (double)s.n_correct / (double)s.n_counted : 0;
    r->norm = grad_global_norm(m->grads, m->n_params);
    r->fwd_s = t1 - t0, r->bwd_s = t2 - t1, r->head_s = s.head_s;
    const FocusTerms *f = &m->focus;
    r->focus = f->on;
    r->S_recall = f->on ? f->S_recall : NAN;
    r->answer_ce = f->on ? f->answer_ce : NAN;
    r->focus_penalty = f->on ? f->penalty_term : 0;
    r->answer_supervision = f->on ? f->answer_term : 0;
    // A NaN or an infinity would spread to every parameter through the update (and AdamW's
    // moments would keep it): the caller decides what such a step means.
    int finite = isfinite(r->loss) && isfinite(r->norm);
    if (finite) {
        if (clip > 0) grad_clip(m->grads, m->n_params, r->norm, clip);
        optim_step(opt, m, lr);
    }
    r->upd_s = now_seconds() - t2;
    return finite;
}
