// A small SVG writer for the evaluator's figures: panels of line plots (axes with ticks, labels, a
// title and a legend each) and a heatmap with a colour bar. Files open in any browser. Writes go to
// PATH.tmp, then a rename, so a reader never sees half a figure.
#pragma once

typedef struct {
    const double *x, *y;  // [n] points; a non-finite y leaves a gap in the line
    int n;
    const char *label;  // legend entry (NULL: not in the legend)
    int color;          // index into the palette (10 colours, then repeats); -1: grey
    int dashed;         // 0: solid line with markers, 1: dashed with markers, 2: dotted, no markers, 3: rings, no line
} PlotSeries;

typedef struct {
    const char *title, *xlabel, *ylabel;
    const PlotSeries *series;
    int n_series;
    double ymin, ymax;  // fixed y range when ymin < ymax; otherwise taken from the data
    int logx;           // 1: a logarithmic x axis (ticks at 1, 2, 5 x 10^k; x <= 0 not drawn)
} PlotPanel;

// A figure of n_panels line plots, `cols` per row, under a title. 0, or -1 when it cannot write.
int svg_line_figure(const char *path, const char *title, const PlotPanel *panels, int n_panels, int cols);

// A heatmap of v[rows * cols] (row-major; a non-finite value is drawn grey), rows top to bottom,
// each cell labelled with its value, a colour bar from vmin to vmax named value_label.
int svg_heatmap(const char *path, const char *title, const double *v, int rows, int cols, const char *row_label,
                const char *col_label, const char *value_label, double vmin, double vmax);

// The palette colour of index i ("#rrggbb").
const char *svg_color(int i);

// An attention map a[T * T] (row i = query position, column j = key position, j <= i), the token
// of each position on both axes (tokens[T]). signed_scale: blue (negative) to white to red
// (positive) over [-max|a|, max|a|]; otherwise white to dark blue over [0, max a]. Rows with
// mark_row[i] set are labelled in bold red; answer[i] >= 0 outlines cell (i, answer[i]) in green.
// token_text (may be NULL: ids only) labels position i as "i:text" instead of "i:id"; pos0 is
// the position of row and column 0 (a window of a longer sequence), for the labels.
int svg_attention_map(const char *path, const char *title, const float *a, int T, int pos0, const int *tokens,
                      const char *const *token_text, const unsigned char *mark_row, const int *answer, int signed_scale);

// A scatter plot: points (x[i], y[i]) coloured by color[i] (palette index), with the y = x line,
// legend entries labels[c] for colours 0..n_labels-1.
int svg_scatter(const char *path, const char *title, const char *xlabel, const char *ylabel, const double *x,
                const double *y, const int *color, int n, const char *const *labels, int n_labels);
