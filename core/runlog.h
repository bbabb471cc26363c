// The run log (docs/outputs.md#the-run-log): every record the programs write to metrics.jsonl,
// sparsity.jsonl and eval.jsonl, one JSON object a line. This file owns the format: the table of
// record types and their fields below is the one definition, the writers refuse a field the table
// does not declare, one reader parses every file, and the docs are tested against the table.
//
// Every record carries its key: its type and step, and where they apply its layer and head and
// its `options` (what an evaluation changed from the run's own: other cells, other data; absent
// for the run's own measurements). A writer that merges into a file (./evaluate's eval.jsonl)
// replaces only records with the same key, so no measurement overwrites a different one.
//
// Adding a field: a line in RUNLOG_FIELDS, a runlog_put_* call where it is measured, a row in the
// docs (tests/test_runlog.c checks that every field is documented).
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/json.h"

// X(ID, "name", "files", "when it is written")
#define RUNLOG_TYPES(X)                                                                                                \
    X(RUN, "run", "metrics.jsonl", "first, when the run starts (step 0): what the run is")                             \
    X(TRAIN, "train", "metrics.jsonl", "every log_every steps and the last")                                           \
    X(EVAL, "eval", "metrics.jsonl, eval.jsonl", "validation loss and accuracy at a step")                             \
    X(NONFINITE, "nan", "metrics.jsonl", "a step with a non-finite loss or gradient")                                  \
    X(SAMPLE, "sample", "metrics.jsonl", "a sample (sample_every)")                                                    \
    X(DONE, "done", "metrics.jsonl", "once, when the run is complete")                                                 \
    X(SPARSITY, "sparsity", "sparsity.jsonl, eval.jsonl", "one head's attention sparsity at a step")                   \
    X(INTERVENTION, "intervention", "intervention.jsonl", "./evaluate intervene=: one changed forward's measurements")

typedef enum {
#define RUNLOG_ENUM(id, name, files, when) RUNLOG_##id,
    RUNLOG_TYPES(RUNLOG_ENUM)
#undef RUNLOG_ENUM
        RUNLOG_N_TYPES,
    RUNLOG_UNKNOWN = RUNLOG_N_TYPES,  // a record of another program or version: readers skip it
} RunlogType;

// What a field holds. NUM: a number, or null where the table says so (a head with no rows).
typedef enum { RF_INT, RF_NUM, RF_STR, RF_INTS, RF_NUMS, RF_STRS } RunlogKind;

// F(TYPE, "field", KIND, "meaning"). Every record has "type" and "step" first. A name with
// <K> and <L> stands for one field per MQAR test cell (acc_kv4_L64, acc_kv8_L128, ...).
#define RUNLOG_FIELDS(F)                                                                                               \
    F(RUN, "mixer", STR, "the mixer key (a comma list for a hybrid stack)")                                            \
    F(RUN, "protocol", INT, "2: val records read a validation set, test read once at the end; absent: older")          \
    F(RUN, "params", INT, "parameter count")                                                                           \
    F(RUN, "state_floats", NUM, "numbers a layer carries between tokens at seq_len, mean over layers")                 \
    F(RUN, "state_floats_by_layer", INTS, "the same per layer")                                                        \
    F(RUN, "test_cells", STRS, "an MQAR mixture: the test cells' names")                                               \
    F(RUN, "commit", STR, "the commit the program was built from (+dirty: with changes; unknown: outside git)")        \
    F(RUN, "compiler", STR, "the compiler's version string")                                                           \
    F(RUN, "cpu", STR, "the CPU's model name")                                                                         \
    F(RUN, "gemm", STR, "the GEMM kernel chosen at run time (model/kernels/gemm_kernels.h)")                           \
    F(TRAIN, "loss", NUM, "training loss of the step")                                                                 \
    F(TRAIN, "acc", NUM, "training accuracy of the step")                                                              \
    F(TRAIN, "lr", NUM, "learning rate of the step")                                                                   \
    F(TRAIN, "grad_norm", NUM, "gradient norm before clipping")                                                        \
    F(TRAIN, "tok_per_s", NUM, "tokens per second of the step")                                                        \
    F(TRAIN, "ms_per_step", NUM, "milliseconds the step took")                                                         \
    F(TRAIN, "focus_penalty", NUM, "a term on: the term added to the loss, lambda x (1 - S_recall)")                   \
    F(TRAIN, "answer_supervision", NUM, "a term on: the term added to the loss, mu x answer_ce")                       \
    F(TRAIN, "S_recall", NUM, "a term on: the batch's mean S over focus_layer's query rows and heads")                 \
    F(TRAIN, "answer_ce", NUM, "a term on: the batch's mean cross-entropy of those rows' |a| against the answer")      \
    F(EVAL, "split", STR, "the set measured: val, or test (older logs without protocol: their val is test)")           \
    F(EVAL, "selected", STR, "split test: the weights it read, best (validation) or last")                             \
    F(EVAL, "loss", NUM, "validation loss")                                                                            \
    F(EVAL, "acc", NUM, "validation accuracy (a mixture: the mean of the cells')")                                     \
    F(EVAL, "acc_kv<K>_L<L>", NUM, "an MQAR mixture: one test cell's accuracy")                                        \
    F(EVAL, "checkpoint", STR, "./evaluate: the checkpoint's file name")                                               \
    F(EVAL, "mixer", STR, "./evaluate: the mixer key")                                                                 \
    F(EVAL, "sequences", INT, "./evaluate: sequences measured")                                                        \
    F(EVAL, "options", STR, "./evaluate: what the evaluation changed from the run's own (part of the key)")            \
    F(EVAL, "examples", INT, "split test: examples measured (sequences)")                                              \
    F(EVAL, "acc_lo", NUM, "split test: the 95% bootstrap interval of acc over examples, its lower end")               \
    F(EVAL, "acc_hi", NUM, "split test: its upper end")                                                                \
    F(EVAL, "examples_by_cell", INTS, "split test, an MQAR mixture: the examples of each test cell, in order")         \
    F(EVAL, "example_queries", INTS, "split test: each example's positions with a target (queries), in order")         \
    F(EVAL, "example_correct", INTS, "split test: how many of them the model answered right")                          \
    F(NONFINITE, "where", STR, "the first tensor that went non-finite, or the loss")                                   \
    F(NONFINITE, "action", STR, "skip or stop")                                                                        \
    F(NONFINITE, "skipped", INT, "steps skipped so far")                                                               \
    F(SAMPLE, "prompt", STR, "the prompt")                                                                             \
    F(SAMPLE, "text", STR, "the generated text")                                                                       \
    F(DONE, "reason", STR, "steps or stop_at_acc")                                                                     \
    F(SPARSITY, "layer", INT, "the layer")                                                                             \
    F(SPARSITY, "head", INT, "the head")                                                                               \
    F(SPARSITY, "mixer", STR, "the layer's mixer")                                                                     \
    F(SPARSITY, "split", STR, "the set measured: val or test (absent in older logs: the eval records' set)")           \
    F(SPARSITY, "recall_layer", INT, "the step's recall layer (eval/derived.h), the same in each of its records")      \
    F(SPARSITY, "S", NUM, "mean S over every row (null: no rows)")                                                     \
    F(SPARSITY, "S_recall", NUM, "mean S over the query rows (null: none)")                                            \
    F(SPARSITY, "rows", INT, "rows measured")                                                                          \
    F(SPARSITY, "rows_recall", INT, "query rows measured")                                                             \
    F(SPARSITY, "rows_zero", INT, "rows whose weights are all zero")                                                   \
    F(SPARSITY, "rows_recall_zero", INT, "query rows whose weights are all zero")                                      \
    F(SPARSITY, "rows_kv", INT, "MQAR key-value rows")                                                                 \
    F(SPARSITY, "rows_other", INT, "MQAR other rows")                                                                  \
    F(SPARSITY, "S_kv", NUM, "mean S of the key-value rows")                                                           \
    F(SPARSITY, "S_other", NUM, "mean S of the other rows")                                                            \
    F(SPARSITY, "S_norm", NUM, "length-normalised S")                                                                  \
    F(SPARSITY, "S_recall_norm", NUM, "length-normalised S of the query rows")                                         \
    F(SPARSITY, "entropy", NUM, "mean entropy of the rows")                                                            \
    F(SPARSITY, "max_weight", NUM, "mean largest weight")                                                              \
    F(SPARSITY, "neg_mass", NUM, "mean negative mass")                                                                 \
    F(SPARSITY, "S_onehot", NUM, "mean 1/sqrt(n) over the rows")                                                       \
    F(SPARSITY, "S_recall_onehot", NUM, "mean 1/sqrt(n) over the query rows")                                          \
    F(SPARSITY, "eff_tokens", NUM, "mean effective tokens n S^2 of the rows (1: one-hot, n: flat)")                    \
    F(SPARSITY, "eff_tokens_recall", NUM, "mean effective tokens n S^2 of the query rows")                             \
    F(SPARSITY, "theory", STR, "the closed form of the prediction")                                                    \
    F(SPARSITY, "rows_pred", INT, "rows with a prediction")                                                            \
    F(SPARSITY, "S_pred", NUM, "mean prediction")                                                                      \
    F(SPARSITY, "S_pred_measured", NUM, "mean measured S over the predicted rows")                                     \
    F(SPARSITY, "S_pred_ratio", NUM, "S_pred_measured / S_pred")                                                       \
    F(SPARSITY, "S_pred_ratio_median", NUM, "median over rows of measured / predicted")                                \
    F(SPARSITY, "S_pred_spearman", NUM, "rank correlation of measured and predicted")                                  \
    F(SPARSITY, "S_inf", NUM, "softmax: the n -> infinity limit")                                                      \
    F(SPARSITY, "S_recall_pred", NUM, "mean prediction over the query rows")                                           \
    F(SPARSITY, "S_recall_pred_measured", NUM, "mean measured S over the predicted query rows")                        \
    F(SPARSITY, "S_recall_pred_ratio", NUM, "the ratio over the query rows")                                           \
    F(SPARSITY, "S_recall_pred_ratio_median", NUM, "the median ratio over the query rows")                             \
    F(SPARSITY, "S_recall_pred_spearman", NUM, "the rank correlation over the query rows")                             \
    F(SPARSITY, "S_recall_inf", NUM, "softmax: the limit over the query rows")                                         \
    F(SPARSITY, "rows_answer", INT, "query rows whose pair was found")                                                 \
    F(SPARSITY, "ans_share", NUM, "weight at the value position")                                                      \
    F(SPARSITY, "ans_chance", NUM, "a uniform row's weight there, 1/n (also a random argmax's hit rate)")              \
    F(SPARSITY, "ans_lift", NUM, "ans_share / ans_chance")                                                             \
    F(SPARSITY, "key_share", NUM, "weight at the key position")                                                        \
    F(SPARSITY, "ans_hit", NUM, "share of query rows whose argmax is the value position")                              \
    F(SPARSITY, "ans_rank", NUM, "mean rank of the value position")                                                    \
    F(SPARSITY, "top1", NUM, "weight of the largest")                                                                  \
    F(SPARSITY, "top4", NUM, "weight of the 4 largest")                                                                \
    F(SPARSITY, "n90", NUM, "fewest positions holding 0.9 of the weight")                                              \
    F(SPARSITY, "answer_window", INT, "width of the layer's answer window, when above 1")                              \
    F(SPARSITY, "ans_window_share", NUM, "weight in the answer window")                                                \
    F(SPARSITY, "ans_window_hit", NUM, "share of query rows whose argmax is in the answer window")                     \
    F(SPARSITY, "ans_window_chance", NUM, "a uniform row's weight in the answer window (and hit rate)")                \
    F(SPARSITY, "ans_window_lift", NUM, "ans_window_share / ans_window_chance")                                        \
    F(SPARSITY, "rows_right", INT, "answer rows the model answered right")                                             \
    F(SPARSITY, "rows_wrong", INT, "answer rows the model answered wrong")                                             \
    F(SPARSITY, "S_recall_right", NUM, "mean S of the rows answered right")                                            \
    F(SPARSITY, "S_recall_wrong", NUM, "mean S of the rows answered wrong")                                            \
    F(SPARSITY, "window_share_right", NUM, "answer-window weight of the rows answered right")                          \
    F(SPARSITY, "window_share_wrong", NUM, "answer-window weight of the rows answered wrong")                          \
    F(SPARSITY, "window_hit_right", NUM, "answer-window hits of the rows answered right")                              \
    F(SPARSITY, "window_hit_wrong", NUM, "answer-window hits of the rows answered wrong")                              \
    F(SPARSITY, "S_recall_kv<K>_L<L>", NUM, "a mixture: S_recall per test cell")                                       \
    F(SPARSITY, "ans_share_kv<K>_L<L>", NUM, "a mixture: ans_share per test cell")                                     \
    F(SPARSITY, "ans_hit_kv<K>_L<L>", NUM, "a mixture: ans_hit per test cell")                                         \
    F(SPARSITY, "ans_window_share_kv<K>_L<L>", NUM, "a mixture: ans_window_share per test cell")                       \
    F(SPARSITY, "pos_bin_width", INT, "positions per bin of S_by_pos")                                                 \
    F(SPARSITY, "S_by_pos", NUMS, "S by query position")                                                               \
    F(SPARSITY, "S_pred_by_pos", NUMS, "the prediction by query position")                                             \
    F(SPARSITY, "options", STR, "./evaluate: what the evaluation changed from the run's own (part of the key)")        \
    F(INTERVENTION, "layer", INT, "the layer changed (-1: every layer)")                                               \
    F(INTERVENTION, "head", INT, "the head changed (-1: every head)")                                                  \
    F(INTERVENTION, "split", STR, "the set measured: val or test")                                                     \
    F(INTERVENTION, "options", STR, "intervene=KIND[:S] rows=R, then other options (part of the key)")                 \
    F(INTERVENTION, "kind", STR, "none (the model as it is), flatten, topk, sharpen, ... (docs/interventions.md)")     \
    F(INTERVENTION, "strength", NUM, "flatten's eps, topk's k, sharpen's p, temperature's tau, a lag kind's lag")      \
    F(INTERVENTION, "rows", STR, "the rows changed: query or all")                                                     \
    F(INTERVENTION, "checkpoint", STR, "the checkpoint's file name")                                                   \
    F(INTERVENTION, "mixer", STR, "the mixer key")                                                                     \
    F(INTERVENTION, "sequences", INT, "sequences measured")                                                            \
    F(INTERVENTION, "loss", NUM, "loss after the change")                                                              \
    F(INTERVENTION, "acc", NUM, "accuracy after the change")                                                           \
    F(INTERVENTION, "acc_lo", NUM, "its 95% bootstrap interval over the sequences, lower end (eval/interval.h)")       \
    F(INTERVENTION, "acc_hi", NUM, "its upper end")                                                                    \
    F(INTERVENTION, "patch_rows", INT, "patch: changed-key query rows where A and A' predict apart")                   \
    F(INTERVENTION, "patch_follows", NUM, "patch: the share of them whose prediction follows A' (null: none)")         \
    F(INTERVENTION, "patch_control", NUM, "patch: the share of the other query rows whose prediction moved")           \
    F(INTERVENTION, "acc_permuted", NUM, "derange_values: the share answered with the permuted input's value")         \
    F(INTERVENTION, "rows_recall", INT, "query rows of the changed maps measured (each map of a head)")                \
    F(INTERVENTION, "S_recall", NUM, "their mean S after the change")                                                  \
    F(INTERVENTION, "eff_tokens_recall", NUM, "their mean effective tokens n S^2 after the change")                    \
    F(INTERVENTION, "rows_answer", INT, "those whose pair was found")                                                  \
    F(INTERVENTION, "ans_share", NUM, "weight at the value position after the change")                                 \
    F(INTERVENTION, "ans_chance", NUM, "a uniform row's weight there")                                                 \
    F(INTERVENTION, "ans_lift", NUM, "ans_share / ans_chance")                                                         \
    F(INTERVENTION, "ans_window_share", NUM, "weight in the answer window after the change")                           \
    F(INTERVENTION, "ans_window_chance", NUM, "a uniform row's weight in the answer window")                           \
    F(INTERVENTION, "ans_window_lift", NUM, "ans_window_share / ans_window_chance")                                    \
    F(INTERVENTION, "contrib_share", NUM, "the answer's share of |a_ij| ||v_j||, the part of o_i it contributes")      \
    F(INTERVENTION, "contrib_chance", NUM, "a uniform row's: ||v_answer|| / sum_j ||v_j||")                            \
    F(INTERVENTION, "contrib_window_share", NUM, "the answer window's contribution share")                             \
    F(INTERVENTION, "contrib_window_chance", NUM, "a uniform row's contribution share of the window")                  \
    F(INTERVENTION, "ans_margin", NUM, "weight share of the answer less the largest other pair's value's")             \
    F(INTERVENTION, "ans_window_margin", NUM, "the same for the answer window against the other pairs' windows")       \
    F(INTERVENTION, "seconds", NUM, "time the pass took")

typedef struct {
    RunlogType type;
    const char *name;
    RunlogKind kind;
    const char *meaning;
} RunlogField;

const char *runlog_type_name(RunlogType t);
RunlogType runlog_type_of(const char *name);  // RUNLOG_UNKNOWN when not a type of the table
// The table: every field of every type (count in *n).
const RunlogField *runlog_fields(int *n);
// The declared field of type t that `name` is (a cell field matches its <K>_L<L> pattern); NULL.
const RunlogField *runlog_field(RunlogType t, const char *name);

// --- writing -------------------------------------------------------------------------------------
// A record is built field by field on one line: runlog_begin, runlog_put_*, runlog_end. A field the
// table does not declare for the type is a programming error (exit 1, naming it).
typedef struct {
    FILE *f;
    RunlogType type;
} RunlogLine;

void runlog_begin(RunlogLine *w, FILE *f, RunlogType type, long step);
void runlog_put_int(RunlogLine *w, const char *field, long v);
// 9 significant digits; a non-finite value leaves the field out.
void runlog_put_num(RunlogLine *w, const char *field, double v);
// The same, but a non-finite value is written null (the field is always there).
void runlog_put_num_or_null(RunlogLine *w, const char *field, double v);
// A number in a printf format of its own ("%.0f", "%.3f"), for fields whose width is their unit.
void runlog_put_num_fmt(RunlogLine *w, const char *field, const char *fmt, double v);
void runlog_put_str(RunlogLine *w, const char *field, const char *s);
// Bytes as a JSON string: invalid UTF-8 written as U+FFFD (generated text).
void runlog_put_bytes(RunlogLine *w, const char *field, const uint8_t *p, size_t n);
void runlog_put_ints(RunlogLine *w, const char *field, const size_t *v, int n);
// %.6g each, null for a non-finite one.
void runlog_put_nums(RunlogLine *w, const char *field, const double *v, int n);
void runlog_put_strs(RunlogLine *w, const char *field, const char *const *v, int n);
void runlog_end(RunlogLine *w);

// The records with one writer each (those of the trainer and the sampler; ./evaluate's eval
// record is the trainer's with its extra fields; the per-head sparsity record is written by
// eval/sparsity.c, which owns its numbers, field by field through the calls above).
typedef struct {
    const char *mixer;
    size_t params;
    double state_floats;
    const size_t *state_floats_by_layer;
    int n_layers;
    const char *const *test_cells;  // NULL: one cell or not MQAR
    int n_test_cells;
    // provenance (core/provenance.h; NULL: left out): the build's commit and compiler, the CPU,
    // the GEMM kernel chosen at run time
    const char *commit, *compiler, *cpu, *gemm;
} RunlogRun;
// The protocol a run record names (written by runlog_write_run): 2 since the validation split.
// A log whose run record has none is older: its "val" records read the test set (task.h).
#define RUNLOG_PROTOCOL 2
void runlog_write_run(FILE *f, const RunlogRun *r);

typedef struct {
    long step;
    double loss, acc, lr, grad_norm, tok_per_s, ms_per_step;
    // focus_penalty or answer_supervision on (model/focus.h): the four fields below are written
    // (null where the batch had no such row); off: left out
    int focus;
    double focus_penalty, answer_supervision, S_recall, answer_ce;
} RunlogTrain;
void runlog_write_train(FILE *f, const RunlogTrain *r);

typedef struct {
    long step;
    double loss, acc;
    int n_cells;                    // an MQAR mixture: its test cells' accuracies (0: none)
    const char *const *cell_names;  // [n_cells] kv4_L64, ...
    const double *cell_acc;         // [n_cells]
    const char *split;              // "val" (NULL) or "test"
    const char *selected;           // split test at the end of a run: "best" or "last" (NULL: left out)
    // ./evaluate only (NULL / -1: left out)
    const char *checkpoint, *mixer, *options;
    long sequences;
    // per-example counts and the interval of acc over them (eval/interval.h; examples 0: left out)
    long examples;
    double acc_lo, acc_hi;
    const size_t *example_queries, *example_correct;  // [examples]
    const size_t *examples_by_cell;                   // [n_cells] a mixture (NULL: one cell)
} RunlogEval;
void runlog_write_eval(FILE *f, const RunlogEval *r);

void runlog_write_nan(FILE *f, long step, const char *where, const char *action, long skipped);
void runlog_write_done(FILE *f, long step, const char *reason);
void runlog_write_sample(FILE *f, long step, const uint8_t *prompt, size_t n_prompt, const uint8_t *text, size_t n_text);

// The regular expression (grep -E) that matches a done record, for shell scripts that ask
// whether a run is finished without parsing JSON (a Slurm task).
const char *runlog_done_regex(void);

// --- reading -------------------------------------------------------------------------------------
typedef struct {
    RunlogType type;  // a sparsity record written without a type (old sparsity.jsonl) reads as one
    long step;
    int layer, head;       // -1 when the record has none
    const char *options;   // "" for the run's own measurements
    const char *split;     // "val" (also when absent) or "test": part of the key
    const JsonValue *obj;  // every field
    const char *line;      // the record's text, without its newline
    size_t len;
} RunlogRecord;

// Calls fn for every complete line of the text that parses as a record with a step (a torn last
// line without its newline does not count; lines that do not parse are skipped). fn returns
// nonzero to stop. runlog_each reads a file: -1 when it cannot be read.
typedef int (*RunlogFn)(const RunlogRecord *r, void *ctx);
int runlog_each(const char *path, RunlogFn fn, void *ctx);
void runlog_each_text(const char *text, size_t len, RunlogFn fn, void *ctx);

// Field getters: NAN / NULL / dflt when the field is absent (or null).
double runlog_num(const RunlogRecord *r, const char *field);
const char *runlog_str(const RunlogRecord *r, const char *field);
long runlog_int(const RunlogRecord *r, const char *field, long dflt);
const JsonValue *runlog_get(const RunlogRecord *r, const char *field);
// Two records are the same measurement (type, step, layer, head, split, options).
int runlog_same_key(const RunlogRecord *a, const RunlogRecord *b);

// Merges fresh records (text of complete lines) into the file at path, atomically: an old record
// is dropped when a fresh one has its key (replace = RUNLOG_SAME_KEY) or its split and options
// (RUNLOG_SAME_SERIES: a whole run re-evaluated under the same options); the rest is kept byte
// for byte. Records are ordered by step, old before fresh within a step. 0; or, with the reason in
// err (core/io.h's atomic writer), -1 when the file cannot be opened for writing (bad input) and
// -2 when it cannot be written or renamed.
typedef enum { RUNLOG_SAME_KEY, RUNLOG_SAME_SERIES } RunlogReplace;
// It holds the file's lock (core/io.h file_lock) from the read to the rename: a second writer waits.
int runlog_merge(const char *path, const char *fresh, size_t len, RunlogReplace replace, char *err, size_t errlen);
// The merge itself, of the old text into out (no file, no lock; the fuzz target's entry).
void runlog_merge_text(const char *old, size_t old_len, const char *fresh, size_t len, RunlogReplace replace, FILE *out);
