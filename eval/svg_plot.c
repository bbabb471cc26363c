#include "eval/svg_plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/io.h"

// Categorical colours that stay apart on white (matplotlib's tab10).
static const char *g_palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char *svg_color(int i) { return i < 0 ? "#888888" : g_palette[i % 10]; }

static void put_text(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static void text(FILE *f, double x, double y, const char *anchor, int size, const char *extra, const char *s) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s%s>", x, y, anchor, size,
            extra ? " " : "", extra ? extra : "");
    put_text(f, s);
    fputs("</text>\n", f);
}

// Tick spacing 1, 2 or 5 x 10^k giving about `want` ticks over [lo, hi].
static double nice_step(double lo, double hi, int want) {
    double raw = (hi - lo) / want, p = pow(10, floor(log10(raw))), r = raw / p;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * p;
}

static void fmt_tick(char *buf, size_t n, double v, double step) {
    if (fabs(v) < step * 1e-9) v = 0;
    if (fabs(v) >= 1e5 || (fabs(v) < 1e-3 && v != 0)) snprintf(buf, n, "%.2g", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, n, "%.*f", dec, v);
    }
}

// Each figure goes through the atomic writer (core/io.h): PATH.tmp, then renamed over PATH, so a
// kill while drawing leaves the earlier figure or the whole new one.
static FILE *open_figure(AtomicFile *a, const char *path) { return atomic_open(a, path, NULL, 0) == 0 ? a->f : NULL; }

static void svg_begin(FILE *f, double w, double h, const char *title) {
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"Helvetica, Arial, sans-serif\">\n",
            w, h, w, h);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    if (title) text(f, w / 2, 24, "middle", 16, "font-weight=\"bold\"", title);
}

static const char *dash(int style) {
    return style == 1 ? " stroke-dasharray=\"6 4\"" : style == 2 ? " stroke-dasharray=\"2 3\"" : "";
}

// --- line plots ------------------------------------------------------------------------------------

enum { PW = 440, PH = 280, ML = 64, MR = 16, MT = 34, MB = 48 };

// Where x sits on the panel's axis: log10(x) on a logarithmic one (NAN for x <= 0).
static double axis_x(const PlotPanel *p, double x) { return !p->logx ? x : x > 0 ? log10(x) : NAN; }

static void data_range(const PlotPanel *p, double *x0, double *x1, double *y0, double *y1) {
    *x0 = *y0 = INFINITY;
    *x1 = *y1 = -INFINITY;
    for (int s = 0; s < p->n_series; s++)
        for (int i = 0; i < p->series[s].n; i++) {
            double x = axis_x(p, p->series[s].x[i]), y = p->series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            if (x < *x0) *x0 = x;
            if (x > *x1) *x1 = x;
            if (y < *y0) *y0 = y;
            if (y > *y1) *y1 = y;
        }
    if (!isfinite(*x0)) *x0 = 0, *x1 = 1;
    if (!isfinite(*y0)) *y0 = 0, *y1 = 1;
    if (p->ymin < p->ymax) {  // the fixed range, with a little air: a marker at either end is drawn whole
        double pad = (p->ymax - p->ymin) * 0.03;
        *y0 = p->ymin - pad, *y1 = p->ymax + pad;
    }
    if (*x1 - *x0 <= 0) *x0 -= 1, *x1 += 1;
    else {  // a little air (in decades on a log axis), so no marker sits on the clipped edge
        double pad = (*x1 - *x0) * (p->logx ? 0.05 : 0.03);
        *x0 -= pad, *x1 += pad;
    }
    if (*y1 - *y0 <= 0) {
        double d = fabs(*y0) > 0 ? fabs(*y0) * 0.1 : 0.5;
        *y0 -= d, *y1 += d;
    } else if (!(p->ymin < p->ymax)) {  // a little air around the data
        double pad = (*y1 - *y0) * 0.05;
        *y0 -= pad, *y1 += pad;
    }
}

static void draw_panel(FILE *f, const PlotPanel *p, double ox, double oy) {
    double x0, x1, y0, y1;
    data_range(p, &x0, &x1, &y0, &y1);
    double ax = ox + ML, ay = oy + MT, aw = PW - ML - MR, ah = PH - MT - MB;
#define SX(v) (ax + ((v)-x0) / (x1 - x0) * aw)
#define SY(v) (ay + ah - ((v)-y0) / (y1 - y0) * ah)
    if (p->title) text(f, ax + aw / 2, oy + 22, "middle", 13, "font-weight=\"bold\"", p->title);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", ax, ay,
            aw, ah);
    char buf[64];
    double st = nice_step(x0, x1, 5);
    for (double v = ceil(x0 / st) * st; !p->logx && v <= x1 + st * 1e-9; v += st) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", SX(v), ay, SX(v), ay + ah);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", SX(v), ay + ah, SX(v),
                ay + ah + 4);
        fmt_tick(buf, sizeof buf, v, st);
        text(f, SX(v), ay + ah + 17, "middle", 11, NULL, buf);
    }
    // logarithmic: within a decade the linear ticks of the range; up to 3 decades 1, 2 and 5 x 10^k;
    // beyond, the powers of ten
    double lo = pow(10, x0), hi = pow(10, x1), lst = nice_step(lo, hi, 5);
    for (double t = ceil(lo / lst) * lst; p->logx && x1 - x0 < 1 && t <= hi; t += lst) {
        double v = log10(t);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", SX(v), ay, SX(v), ay + ah);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", SX(v), ay + ah, SX(v),
                ay + ah + 4);
        fmt_tick(buf, sizeof buf, t, lst);
        text(f, SX(v), ay + ah + 17, "middle", 11, NULL, buf);
    }
    for (int k = (int)floor(x0); p->logx && x1 - x0 >= 1 && k <= (int)ceil(x1); k++)
        for (int m = 1; m <= 5; m++) {
            double v = k + log10((double)m);
            int shown = m == 1 || (x1 - x0 <= 3 && (m == 2 || m == 5));
            if (v < x0 || v > x1 || !shown) continue;
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", SX(v), ay, SX(v),
                    ay + ah);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", SX(v), ay + ah,
                    SX(v), ay + ah + 4);
            double x = m * pow(10, k);
            if (x >= 1e5 || x < 1e-2) snprintf(buf, sizeof buf, "%.0fe%d", (double)m, k);
            else fmt_tick(buf, sizeof buf, x, x < 1 ? x : 1);
            text(f, SX(v), ay + ah + 17, "middle", 11, NULL, buf);
        }
    st = nice_step(y0, y1, 5);
    for (double v = ceil(y0 / st) * st; v <= y1 + st * 1e-9; v += st) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ax, SY(v), ax + aw, SY(v));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", ax - 4, SY(v), ax, SY(v));
        fmt_tick(buf, sizeof buf, v, st);
        text(f, ax - 7, SY(v) + 4, "end", 11, NULL, buf);
    }
    if (p->xlabel) text(f, ax + aw / 2, oy + PH - 10, "middle", 12, NULL, p->xlabel);
    if (p->ylabel) {
        char rot[96];
        snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", ox + 16, ay + ah / 2);
        text(f, ox + 16, ay + ah / 2, "middle", 12, rot, p->ylabel);
    }
    // series, clipped to the axes box
    static int clip_id;
    clip_id++;
    fprintf(f, "<clipPath id=\"c%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n",
            clip_id, ax, ay, aw, ah);
    fprintf(f, "<g clip-path=\"url(#c%d)\">\n", clip_id);
    for (int s = 0; s < p->n_series; s++) {
        const PlotSeries *se = &p->series[s];
        const char *col = svg_color(se->color);
        int open = 0;
        for (int i = 0; i < se->n; i++) {
            double xv = axis_x(p, se->x[i]);
            int ok = isfinite(xv) && isfinite(se->y[i]);
            if (ok && !open && se->dashed != 3) {
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"", col, dash(se->dashed));
                open = 1;
            }
            if (ok && open) fprintf(f, "%.1f,%.1f ", SX(xv), SY(se->y[i]));
            if ((!ok || i == se->n - 1) && open) {
                fputs("\"/>\n", f);
                open = 0;
            }
        }
        for (int i = 0; i < se->n && se->dashed != 2; i++)
            if (isfinite(axis_x(p, se->x[i])) && isfinite(se->y[i])) {
                if (se->dashed == 3)  // a ring: seen around a line's marker at the same point
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                            SX(axis_x(p, se->x[i])), SY(se->y[i]), col);
                else
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", SX(axis_x(p, se->x[i])),
                            SY(se->y[i]), col);
            }
    }
    fputs("</g>\n", f);
    // legend to the right of the axes
    double ly = ay + 8;
    for (int s = 0; s < p->n_series; s++) {
        const PlotSeries *se = &p->series[s];
        if (!se->label) continue;
        if (se->dashed == 3)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                    ox + PW + 14, ly, svg_color(se->color));
        else
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                    ox + PW + 2, ly, ox + PW + 26, ly, svg_color(se->color), dash(se->dashed));
        text(f, ox + PW + 31, ly + 4, "start", 11, NULL, se->label);
        ly += 17;
    }
#undef SX
#undef SY
}

int svg_line_figure(const char *path, const char *title, const PlotPanel *panels, int n_panels, int cols) {
    if (cols < 1) cols = 1;
    if (cols > n_panels) cols = n_panels > 0 ? n_panels : 1;
    int rows = (n_panels + cols - 1) / cols;
    // legend column as wide as the longest entry (about 6.3 px a character at 11 px)
    size_t longest = 0;
    for (int i = 0; i < n_panels; i++)
        for (int k = 0; k < panels[i].n_series; k++)
            if (panels[i].series[k].label && strlen(panels[i].series[k].label) > longest)
                longest = strlen(panels[i].series[k].label);
    double legend_w = longest ? 44 + 6.3 * (double)longest : 16;
    double cw = PW + legend_w, w = cols * cw + 10, h = rows * PH + 40;
    AtomicFile out;
    FILE *f = open_figure(&out, path);
    if (!f) return -1;
    svg_begin(f, w, h, title);
    for (int i = 0; i < n_panels; i++) draw_panel(f, &panels[i], (i % cols) * cw, 36 + (i / cols) * PH);
    fputs("</svg>\n", f);
    return atomic_commit(&out, NULL, 0);
}

// --- heatmap ---------------------------------------------------------------------------------------

// viridis at 9 stops, interpolated linearly
static void viridis(double t, int rgb[3]) {
    static const int stops[9][3] = {{68, 1, 84},    {71, 44, 122}, {59, 81, 139},  {44, 113, 142}, {33, 144, 141},
                                    {39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37}};
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    double u = t * 8;
    int i = (int)u;
    if (i > 7) i = 7;
    double fr = u - i;
    for (int c = 0; c < 3; c++) rgb[c] = (int)lround(stops[i][c] + fr * (stops[i + 1][c] - stops[i][c]));
}

int svg_heatmap(const char *path, const char *title, const double *v, int rows, int cols, const char *row_label,
                const char *col_label, const char *value_label, double vmin, double vmax) {
    if (!(vmax > vmin)) vmax = vmin + 1;
    double cw = cols <= 8 ? 88 : 704.0 / cols, ch = rows <= 8 ? 56 : 448.0 / rows;
    if (cw < 14) cw = 14;
    if (ch < 10) ch = 10;
    double gx = 80, gy = 56, gw = cols * cw, gh = rows * ch;
    double bh = gh < 120 ? 120 : gh, bw = 14;  // colour bar
    double w = gx + gw + 130, h = gy + (gh + 44 > bh ? gh + 44 : bh) + 16;
    if (w < 400) w = 400;
    char buf[64];
    AtomicFile out;
    FILE *f = open_figure(&out, path);
    if (!f) return -1;
    svg_begin(f, w, h, title);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double val = v[(size_t)r * cols + c];
            double x = gx + c * cw, y = gy + r * ch;
            if (!isfinite(val)) {
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#bbb\"/>\n", x, y, cw, ch);
                continue;
            }
            int rgb[3];
            double t = (val - vmin) / (vmax - vmin);
            viridis(t, rgb);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"rgb(%d,%d,%d)\"><title>", x,
                    y, cw, ch, rgb[0], rgb[1], rgb[2]);
            fprintf(f, "%s %d, %s %d: %.4g</title></rect>\n", row_label ? row_label : "row", r,
                    col_label ? col_label : "col", c, val);
            if (cw >= 36 && ch >= 18) {
                snprintf(buf, sizeof buf, "%.3f", val);
                text(f, x + cw / 2, y + ch / 2 + 4, "middle", 11, t < 0.6 ? "fill=\"white\"" : "fill=\"black\"", buf);
            }
        }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", gx, gy,
            gw, gh);
    int every_c = cols > 16 ? (cols + 15) / 16 : 1, every_r = rows > 16 ? (rows + 15) / 16 : 1;
    for (int c = 0; c < cols; c += every_c) {
        snprintf(buf, sizeof buf, "%d", c);
        text(f, gx + (c + 0.5) * cw, gy + gh + 16, "middle", 11, NULL, buf);
    }
    for (int r = 0; r < rows; r += every_r) {
        snprintf(buf, sizeof buf, "%d", r);
        text(f, gx - 6, gy + (r + 0.5) * ch + 4, "end", 11, NULL, buf);
    }
    if (col_label) text(f, gx + gw / 2, gy + gh + 36, "middle", 12, NULL, col_label);
    if (row_label) {
        char rot[96];
        snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", gx - 40, gy + gh / 2);
        text(f, gx - 40, gy + gh / 2, "middle", 12, rot, row_label);
    }
    // colour bar
    double bx = gx + gw + 24;
    for (int i = 0; i < 32; i++) {
        int rgb[3];
        viridis((i + 0.5) / 32, rgb);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"rgb(%d,%d,%d)\"/>\n", bx,
                gy + bh - (i + 1) * bh / 32, bw, bh / 32 + 0.3, rgb[0], rgb[1], rgb[2]);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", bx, gy,
            bw, bh);
    double st = nice_step(vmin, vmax, 4);
    for (double t = ceil(vmin / st) * st; t <= vmax + st * 1e-9; t += st) {
        double y = gy + bh - (t - vmin) / (vmax - vmin) * bh;
        fmt_tick(buf, sizeof buf, t, st);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", bx + bw, y, bx + bw + 4, y);
        text(f, bx + bw + 7, y + 4, "start", 11, NULL, buf);
    }
    if (value_label) text(f, bx + bw / 2, gy - 10, "middle", 12, NULL, value_label);
    fputs("</svg>\n", f);
    return atomic_commit(&out, NULL, 0);
}

// --- attention maps ------------------------------------------------------------------------------

static void map_colour(double v, double vmax, int signed_scale, int rgb[3]) {
    double t = vmax > 0 ? v / vmax : 0;
    if (t > 1) t = 1;
    if (t < -1) t = -1;
    if (signed_scale) {  // white at 0, red (214, 39, 40) positive, blue (31, 119, 180) negative
        static const int pos[3] = {214, 39, 40}, neg[3] = {31, 119, 180};
        const int *e = t >= 0 ? pos : neg;
        double u = fabs(t);
        for (int c = 0; c < 3; c++) rgb[c] = (int)lround(255 + u * (e[c] - 255));
    } else {  // white to dark blue (8, 48, 107)
        static const int end[3] = {8, 48, 107};
        if (t < 0) t = 0;
        for (int c = 0; c < 3; c++) rgb[c] = (int)lround(255 + t * (end[c] - 255));
    }
}

int svg_attention_map(const char *path, const char *title, const float *a, int T, int pos0, const int *tokens,
                      const char *const *token_text, const unsigned char *mark_row, const int *answer, int signed_scale) {
    double cs = T <= 16 ? 28 : T <= 32 ? 18 : T <= 64 ? 11 : 720.0 / T;  // cell size
    double lab = 74;                                                     // room for "pos:token" labels
    double gx = lab + 10, gy = 48 + lab, gw = T * cs;
    double w = gx + gw + 120, h = gy + gw + 40;
    double vmax = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double v = fabs((double)a[(size_t)i * T + j]);
            if (v > vmax) vmax = v;
        }
    char buf[64];
    AtomicFile out;
    FILE *f = open_figure(&out, path);
    if (!f) return -1;
    svg_begin(f, w, h, title);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\"/>\n", gx, gy, gw, gw);
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) {
            double v = (double)a[(size_t)i * T + j];
            int rgb[3];
            map_colour(v, vmax, signed_scale, rgb);
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"rgb(%d,%d,%d)\"><title>"
                    "row %d (token %d), col %d (token %d): %.4g</title></rect>\n",
                    gx + j * cs, gy + i * cs, cs, cs, rgb[0], rgb[1], rgb[2], pos0 + i, tokens[i], pos0 + j, tokens[j], v);
        }
    for (int i = 0; i < T; i++)
        if (answer && answer[i] >= 0)
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#2ca02c\" "
                    "stroke-width=\"2\"/>\n",
                    gx + answer[i] * cs, gy + i * cs, cs, cs);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", gx, gy,
            gw, gw);
    int fs = cs >= 11 ? 9 : 7, every = cs >= 8 ? 1 : (int)ceil(8 / cs);
    for (int i = 0; i < T; i += every) {
        int mark = mark_row && mark_row[i];
        const char *style = mark ? "fill=\"#d62728\" font-weight=\"bold\"" : "fill=\"#333\"";
        if (token_text) snprintf(buf, sizeof buf, "%d:%.40s", pos0 + i, token_text[i]);
        else snprintf(buf, sizeof buf, "%d:%d", pos0 + i, tokens[i]);
        text(f, gx - 4, gy + (i + 0.5) * cs + 3, "end", fs, style, buf);  // rows: queries
        char rot[160];
        snprintf(rot, sizeof rot, "%s transform=\"rotate(-90 %.1f %.1f)\"", style, gx + (i + 0.5) * cs + 3, gy - 4);
        text(f, gx + (i + 0.5) * cs + 3, gy - 4, "start", fs, rot, buf);  // columns: keys
    }
    text(f, gx + gw / 2, h - 12, "middle", 12, NULL, "rows: query position:token (red: a query row); green box: its answer");
    // colour bar
    double bx = gx + gw + 24, bh = gw < 160 ? 160 : gw;
    if (bh > gw) bh = gw;
    for (int k = 0; k < 32; k++) {
        int rgb[3];
        double t = signed_scale ? -1 + 2 * (k + 0.5) / 32 : (k + 0.5) / 32;
        map_colour(t * vmax, vmax, signed_scale, rgb);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.2f\" width=\"14\" height=\"%.2f\" fill=\"rgb(%d,%d,%d)\"/>\n", bx,
                gy + bh - (k + 1) * bh / 32, bh / 32 + 0.3, rgb[0], rgb[1], rgb[2]);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", bx, gy, bh);
    snprintf(buf, sizeof buf, "%.3g", vmax);
    text(f, bx + 20, gy + 8, "start", 11, NULL, buf);
    snprintf(buf, sizeof buf, "%.3g", signed_scale ? -vmax : 0.0);
    text(f, bx + 20, gy + bh, "start", 11, NULL, buf);
    text(f, bx + 7, gy - 8, "middle", 12, NULL, "a_ij");
    fputs("</svg>\n", f);
    return atomic_commit(&out, NULL, 0);
}

// --- scatter ---------------------------------------------------------------------------------------

int svg_scatter(const char *path, const char *title, const char *xlabel, const char *ylabel, const double *x,
                const double *y, const int *color, int n, const char *const *labels, int n_labels) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            lo = fmin(lo, fmin(x[i], y[i]));
            hi = fmax(hi, fmax(x[i], y[i]));
        }
    if (!isfinite(lo)) lo = 0, hi = 1;
    if (hi - lo <= 0) lo -= 0.05, hi += 0.05;
    double pad = (hi - lo) * 0.05;
    lo -= pad, hi += pad;
    double ax = 70, ay = 44, aw = 360, ah = 360, w = ax + aw + 190, h = ay + ah + 56;
    char buf[64];
    AtomicFile out;
    FILE *f = open_figure(&out, path);
    if (!f) return -1;
    svg_begin(f, w, h, title);
#define SX(v) (ax + ((v)-lo) / (hi - lo) * aw)
#define SY(v) (ay + ah - ((v)-lo) / (hi - lo) * ah)
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", ax, ay,
            aw, ah);
    double st = nice_step(lo, hi, 5);
    for (double v = ceil(lo / st) * st; v <= hi + st * 1e-9; v += st) {
        fmt_tick(buf, sizeof buf, v, st);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", SX(v), ay, SX(v), ay + ah);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ax, SY(v), ax + aw, SY(v));
        text(f, SX(v), ay + ah + 17, "middle", 11, NULL, buf);
        text(f, ax - 7, SY(v) + 4, "end", 11, NULL, buf);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"6 4\"/>\n",
            SX(lo), SY(lo), SX(hi), SY(hi));
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]))
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.75\"><title>%.4g, %.4g</title></circle>\n",
                    SX(x[i]), SY(y[i]), svg_color(color[i]), x[i], y[i]);
    text(f, ax + aw / 2, ay + ah + 40, "middle", 12, NULL, xlabel);
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", ax - 48, ay + ah / 2);
    text(f, ax - 48, ay + ah / 2, "middle", 12, rot, ylabel);
    for (int c = 0; c < n_labels; c++) {
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", ax + aw + 20, ay + 10 + c * 18.0,
                svg_color(c));
        text(f, ax + aw + 30, ay + 14 + c * 18.0, "start", 11, NULL, labels[c]);
    }
    text(f, ax + aw + 20, ay + 14 + n_labels * 18.0, "start", 11, "fill=\"#888\"", "- - measured = predicted");
#undef SX
#undef SY
    fputs("</svg>\n", f);
    return atomic_commit(&out, NULL, 0);
}
