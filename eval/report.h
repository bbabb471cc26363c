// report.html: one self-contained page per run folder (docs/sparsity.md "Pictures"): the config,
// accuracy and S over steps, the per-head table at the last checkpoint, S by position, the
// predicted-vs-measured scatter and the attention heatmaps. Figures are the run folder's SVG files
// inlined as data: URIs (each keeps its own ids), so the page needs no network and no other file.
#pragma once

// The per-head sparsity records of one step (eval.jsonl lines with "type":"sparsity"), parsed.
typedef struct {
    long step;
    int n;
    struct JsonValue **rec;  // [n], in file order
} StepRecords;

// Reads the sparsity records of the last step of dir/eval.jsonl in the series of `options` ("":
// the run's own measurements; docs/outputs.md#the-run-log); 0 when none.
int report_read_last_step(const char *dir, const char *options, StepRecords *out);
void report_records_free(StepRecords *r);

// dir/sparsity_by_pos.svg: per layer, S and its prediction against the query position n (bins),
// with the one-hot floor 1/sqrt(n). 0, or -1 when nothing was written.
int report_plot_by_position(const char *dir, const StepRecords *r, const char *title);
// dir/sparsity_scatter.svg: predicted against measured S per (layer, head) at every checkpoint of
// dir/eval.jsonl (the series of `options`), over all rows and over the query rows. 0, or -1 when
// there are no predictions.
int report_plot_scatter(const char *dir, const char *options, const char *title);

// Writes dir/report.html. config_text: the last checkpoint's config; acc: its accuracy (NAN:
// unknown); the figures are taken from dir when they exist (map_L*_H*.svg: the heatmaps).
int report_write_html(const char *dir, const char *mixer, long step, double loss, double acc, const char *config_text,
                      const StepRecords *r);
