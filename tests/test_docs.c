// The documentation follows the code: docs/config.md documents every config key, docs/mixers.md
// has a section for every registered mixer, and every reference to a docs page (and heading)
// anywhere in the repository resolves, as does every source path a code comment names. The
// repository owns its design: nothing cites a document that lives outside it.
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/io.h"
#include "model/keys.h"
#include "model/mixers/mixer.h"
#include "tests/test.h"

// --- headings and anchors ----------------------------------------------------------------------

// GitHub's anchor of a heading's text: lowercase; letters, digits, '-' and '_' kept, spaces
// become '-', everything else (backticks, dots, slashes, parentheses, ...) is dropped.
static void anchor_of(const char *text, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)text[i];
        if (isalnum(c) || c == '-' || c == '_') out[o++] = (char)tolower(c);
        else if (c == ' ') out[o++] = '-';
    }
    out[o] = 0;
}

// The anchors of a markdown file's headings (outside code fences), with GitHub's -1, -2, ...
// suffixes for repeats, as one string "\n<a>\n<b>\n...".
static char *md_anchors(const char *md) {
    size_t cap = strlen(md) + 16, len = 0;
    char *out = callocCheck(cap, 1);
    out[len++] = '\n';
    int fence = 0;
    for (const char *line = md; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n >= 3 && !strncmp(line, "```", 3)) fence = !fence;
        size_t h = 0;
        while (h < n && h < 7 && line[h] == '#') h++;
        if (!fence && h >= 1 && h <= 6 && h < n && line[h] == ' ') {
            char a[256], want[300];
            anchor_of(line + h + 1, n - h - 1, a, sizeof a);
            snprintf(want, sizeof want, "\n%s\n", a);
            char unique[300];
            snprintf(unique, sizeof unique, "%s", a);
            for (int k = 1; strstr(out, want); k++) {  // a repeated heading gets -k
                snprintf(unique, sizeof unique, "%s-%d", a, k);
                snprintf(want, sizeof want, "\n%s\n", unique);
            }
            size_t u = strlen(unique);
            CHECK(len + u + 2 < cap);
            memcpy(out + len, unique, u);
            len += u;
            out[len++] = '\n';
            out[len] = 0;
        }
        line = end ? end + 1 : line + n;
    }
    return out;
}

// 1 when the markdown file at path exists and (when anchor is non-empty) has that heading.
static int md_has(const char *path, const char *anchor, int *exists) {
    char *md = read_file_text(path, NULL);
    *exists = md != NULL;
    if (!md) return 0;
    if (!*anchor) {
        free(md);
        return 1;
    }
    char *anchors = md_anchors(md), want[300];
    snprintf(want, sizeof want, "\n%s\n", anchor);
    int ok = strstr(anchors, want) != NULL;
    free(anchors);
    free(md);
    return ok;
}

// --- keys and mixers ---------------------------------------------------------------------------

// 1 when some table row of md has `name` in its first cell.
static int table_row_names(const char *md, const char *name) {
    char want[128];
    snprintf(want, sizeof want, "`%s`", name);
    for (const char *line = md; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "| ", 2)) continue;
        const char *cell_end = strstr(line + 2, " |");
        const char *nl = strchr(line, '\n');
        if (!cell_end || (nl && cell_end > nl)) continue;
        const char *hit = strstr(line + 2, want);
        if (hit && hit < cell_end) return 1;
    }
    return 0;
}

TEST(docs_config_documents_every_key) {
    char *md = read_file_text("docs/config.md", NULL);
    CHECK(md, "run the tests from the repository root (docs/config.md not found)");
    Config c;
    config_init_all(&c);
    for (int i = 0; i < c.n_keys; i++)
        CHECK(table_row_names(md, c.keys[i]->name), "docs/config.md has no table row for the key `%s`", c.keys[i]->name);
    free(md);
}

// 1 when text names the key: `name`, `name = ...` or name=... (as on a command line).
static int docs_name_key(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)); p += n) {
        char before = p > text ? p[-1] : ' ', after = p[n];
        if (isalnum((unsigned char)before) || before == '_') continue;
        if (after == '`' || after == '=' || (after == ' ' && p[n + 1] == '=')) return 1;
    }
    return 0;
}

TEST(docs_mixers_has_a_section_for_every_mixer) {
    char *md = read_file_text("docs/mixers.md", NULL);
    CHECK(md, "docs/mixers.md not found");
    char want[128];
    for (int i = 0; i < mixer_count(); i++) {
        snprintf(want, sizeof want, "\n## %s\n", mixer_at(i)->name);
        CHECK(strstr(md, want), "docs/mixers.md has no '## %s' section", mixer_at(i)->name);
        snprintf(want, sizeof want, "| `%s` |", mixer_at(i)->name);
        CHECK(strstr(md, want), "docs/mixers.md's table lacks %s", want);
    }
    free(md);
}

TEST(readme_links_every_docs_page) {
    char *readme = read_file_text("README.md", NULL);
    CHECK(readme, "README.md not found");
    DIR *d = opendir("docs");
    CHECK(d, "no docs/ folder");
    int pages = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md")) continue;
        char want[300];
        snprintf(want, sizeof want, "(docs/%s)", e->d_name);
        CHECK(strstr(readme, want), "README.md does not link docs/%s", e->d_name);
        pages++;
    }
    closedir(d);
    CHECK(pages >= 10, "only %d docs pages", pages);
    free(readme);
}

// Results I's table (the README's until Results II) is generated: results/readme_table.sh prints it
// from the committed sweep's summary, and docs/results.md shows exactly that.
TEST(readme_results_table_is_what_readme_table_sh_prints) {
    static char table[16384];
    int rc = test_run(table, sizeof table, "bash results/readme_table.sh results/mqar_results");
    CHECK(rc == 0, "results/readme_table.sh (exit %d): %s", rc, table);
    CHECK(strlen(table) > 500 && strstr(table, "| `softmax` |"), "%s", table);
    char *md = read_file_text("docs/results.md", NULL);
    CHECK(md, "docs/results.md not found");
    CHECK(strstr(md, table), "docs/results.md does not show the table results/readme_table.sh prints:\n%s", table);
    free(md);
    // and the README no longer does: its Results are Results II's (results/results2.sh)
    char *readme = read_file_text("README.md", NULL);
    CHECK(readme && !strstr(readme, table), "README.md still shows Results I's table");
    free(readme);
}

// The one-seed pilots' tables are generated too: results/pilot_table.sh prints each from the
// committed sweep's summary, and docs/results.md shows exactly that.
TEST(results_pilot_table_is_what_pilot_table_sh_prints) {
    static const char *pilots[][2] = {{"results/delta_pilot", "| `gated_deltanet` |"},
                                      {"results/based_pilot", "| `based` |"}};
    char *md = read_file_text("docs/results.md", NULL);
    CHECK(md, "docs/results.md not found");
    for (int i = 0; md && i < 2; i++) {
        static char table[8192];
        int rc = test_run(table, sizeof table, "bash results/pilot_table.sh %s", pilots[i][0]);
        CHECK(rc == 0, "results/pilot_table.sh %s (exit %d): %s", pilots[i][0], rc, table);
        CHECK(strstr(table, pilots[i][1]), "%s", table);
        CHECK(strstr(md, table), "docs/results.md does not show the table of results/pilot_table.sh %s:\n%s",
              pilots[i][0], table);
    }
    free(md);
}

// The pages show exactly the blocks `sh SCRIPT MODE` prints between its marker comments
// ("<!-- TAG NAME -->" .. "<!-- /TAG NAME -->"), no more and no fewer (at least min of them).
static void check_blocks(const char *script, const char *tag, const char *const pages[][2], int n_pages, int min) {
    static char out[65536];
    char open_tag[96], close_tag[96];
    snprintf(open_tag, sizeof open_tag, "<!-- %s ", tag);
    snprintf(close_tag, sizeof close_tag, "<!-- /%s ", tag);
    for (int i = 0; i < n_pages; i++) {
        int rc = test_run(out, sizeof out, "sh %s %s", script, pages[i][0]);
        CHECK(rc == 0, "%s %s (exit %d): %s", script, pages[i][0], rc, out);
        CHECK(strlen(out) + 1 < sizeof out, "%s %s: output truncated", script, pages[i][0]);
        char *md = read_file_text(pages[i][1], NULL);
        CHECK(md, "%s not found", pages[i][1]);
        int blocks = 0, marked = 0;
        for (char *b = strstr(out, open_tag); b; b = strstr(b, open_tag)) {
            char *e = strstr(b, close_tag);
            CHECK(e && strchr(e, '\n'), "%s %s: a block without its end marker", script, pages[i][0]);
            e = strchr(e, '\n') + 1;
            char keep = *e;
            *e = 0;
            CHECK(strstr(md, b), "%s does not show the block %s %s prints (run %s --write):\n%s", pages[i][1], script,
                  pages[i][0], script, b);
            *e = keep;
            b = e;
            blocks++;
        }
        for (const char *m = strstr(md, open_tag); m; m = strstr(m + 1, open_tag)) marked++;
        CHECK(blocks >= min && marked == blocks, "%s has %d %s blocks, the script prints %d", pages[i][1], marked, tag,
              blocks);
        free(md);
    }
}

// The results prose is generated too: results/results_prose.sh prints every paragraph of
// docs/results.md's Results I prose from the committed logs and summaries, each between its marker
// comments, and the page shows exactly those blocks: a number that is not in the logs, or a stale
// sentence, fails here.
TEST(results_prose_is_what_results_prose_sh_prints) {
    const char *const pages[][2] = {{"results", "docs/results.md"}};
    check_blocks("results/results_prose.sh", "results_prose.sh", pages, 1, 2);
    char *readme = read_file_text("README.md", NULL);
    CHECK(readme && !strstr(readme, "<!-- results_prose.sh "), "README.md still has a results_prose.sh block (Results I's)");
    free(readme);
}

// The pages' prose is wrapped at 100 columns: a script's output read as one line, so a sentence
// can be looked for whole.
static void one_line(char *s) {
    for (; *s; s++)
        if (*s == '\n') *s = ' ';
}

// Results II the same way: results/results2.sh prints its blocks from results/mqar_results2's
// collected summary.
TEST(results2_is_what_results2_sh_prints) {
    const char *const pages[][2] = {{"readme", "README.md"}, {"results", "docs/results.md"}};
    check_blocks("results/results2.sh", "results2.sh", pages, 2, 1);
}

// Issue 40's last condition: `./sweep FILE --collect` on the committed run folders (Results II's and
// its focus-seeds sweep's) reproduces the committed summaries byte for byte (the run folders copied to a scratch folder, collected there;
// only the folder's own name in summary.md's first line differs, and is put back before comparing).
TEST(results2_collect_reproduces_the_committed_summaries) {
    static const char *sweeps[] = {"mqar_results2", "mqar_focus_seeds"};
    static char out[8192];
    for (size_t i = 0; i < sizeof sweeps / sizeof *sweeps; i++) {
        const char *d = test_path(sweeps[i]);
        int rc = test_run(out, sizeof out,
                          "rm -rf '%s' && mkdir -p '%s' && cp -r results/%s/mixer=* '%s'/ && "
                          "./sweep configs/ablations/%s.sweep --collect --out '%s' > /dev/null && "
                          "for f in summary.md summary.csv summary_groups.csv summary_interventions.csv; do "
                          "  sed 's|run folders in `%s/`|run folders in `results/%s/`|' '%s'/$f | "
                          "  cmp -s - results/%s/$f || echo \"differs: $f\"; done",
                          d, d, sweeps[i], d, sweeps[i], d, d, sweeps[i], d, sweeps[i]);
        CHECK(rc == 0 && !strstr(out, "differs"), "./sweep configs/ablations/%s.sweep --collect (exit %d): %s",
              sweeps[i], rc, out);
    }
}

// results/results2.sh on a summary with held-out runs and interventions (a fixture): per variant the
// held-out seeds' values in point order (the selection seed apart), the chosen rate in bold, the
// intervention records of the held-out runs at their causal layer only; a run with fewer kinds of
// record than another (its after_run still going) does not count as having its interventions.
TEST(results2_sh_reads_held_out_seeds_and_interventions) {
    const char *dir = test_path("r2fixture");
    CHECK(mkdir_p(dir) == 0);
    test_write_file("r2fixture/summary.csv",
                    "point,mixer,short_conv,lr,seed,status,best_acc,reached_0.99,steps_to_0.99,selection,test_acc,"
                    "best_recall_layer,best_recall_eff_tokens,best_recall_share,best_recall_chance,best_recall_lift,best_S_right,"
                    "best_S_wrong\n"
                    "\"a,0\",linear,4,2.2e-3,0,done,0.9,0,,chosen,0.1,0,3,0.5,0.25,2,0.4,0.5\n"
                    "\"a,1\",linear,4,2.2e-3,1,done,0.995,1,392,,0.99,0,2,0.6,0.25,2.4,0.4,0.6\n"
                    "\"a,2\",linear,4,2.2e-3,2,done,0.5,0,,,0.49,1,4,0.3,0.25,1.2,0.5,0.5\n"
                    "\"a,3\",linear,4,2.2e-3,3,done,0.999,1,588,,0.998,0,1.5,0.8,0.25,3.2,0.3,0.7\n"
                    "\"b,0\",linear,4,1e-2,0,done,0.8,0,,not_chosen,0.2,0,3,0.5,0.25,2,0.4,0.5\n"
                    "\"b,1\",linear,4,1e-2,1,not_selected,,0,,,,,,,,,,\n");
    test_write_file("r2fixture/summary_interventions.csv",
                    "point,mixer,short_conv,lr,seed,in_tables,step,causal_layer,kind,layer,strength,acc,S_recall\n"
                    "\"a,0\",linear,4,2.2e-3,0,0,10,1,none,1,,0.111,0.5\n"
                    "\"a,1\",linear,4,2.2e-3,1,1,10,1,none,1,,0.995,0.5\n"
                    "\"a,1\",linear,4,2.2e-3,1,1,10,1,ablate,0,,0.9,1\n"
                    "\"a,1\",linear,4,2.2e-3,1,1,10,1,ablate,1,,0.2,1\n"
                    "\"a,1\",linear,4,2.2e-3,1,1,10,1,oracle,1,,1,0.24\n"
                    "\"a,1\",linear,4,2.2e-3,1,1,10,1,oracle,0,,0.333,0.24\n"
                    "\"a,1\",linear,4,2.2e-3,1,1,10,1,topk,1,1,0.97,0.24\n"
                    "\"a,1\",linear,4,2.2e-3,1,1,10,1,topk,1,2,0.444,0.3\n"
                    "\"a,2\",linear,4,2.2e-3,2,1,10,0,none,0,,0.5,0.5\n"
                    "\"a,2\",linear,4,2.2e-3,2,1,10,0,ablate,0,,0.25,1\n");
    static char out[16384];
    int rc = test_run(out, sizeof out, "sh results/results2.sh results %s", dir);
    CHECK(rc == 0, "%s", out);
    one_line(out);
    CHECK(strstr(out,
                 ": 5 of its 5 runs have finished; the learning rate is chosen for 1 of the 1 variants on seed 0's "
                 "validation accuracy, 3 of the 3 held-out runs (the other seeds at the chosen rate) have finished, 1 of "
                 "them with all their interventions"),
          "%s", out);
    CHECK(strstr(out, "| `linear` + short_conv 4 | - | **0.9000, never 0.99** | 0.8000, never 0.99 | 2.2e-3 | 0.9000, 0.1000 |"),
          "%s", out);
    CHECK(strstr(out,
                 "| `linear` + short_conv 4 | 2.2e-3 | 3 | 2/3 | 0.8260 (0.9900, 0.4900, 0.9980) | "
                 "0.8313 (0.9950, 0.5000, 0.9990) | 392, 588 | L0, L1, L0 | 2.50 (2.00, 4.00, 1.50) |"),
          "%s", out);
    CHECK(strstr(out, "| `linear` + short_conv 4 | 2 | L1, L0 | 0.9950, 0.5000 | 0.2000, 0.2500 | - | 0.9700 | - | 1.0000 | - | - |"),
          "%s", out);
    CHECK(!strstr(out, "0.111") && !strstr(out, "0.333") && !strstr(out, "0.444"), "%s", out);
    // the focus-seeds sweep: no rate varied (its rows show the sweep file's), a variant per focus
    // setting, every seed held out
    const char *fdir = test_path("r2focus");
    CHECK(mkdir_p(fdir) == 0);
    test_write_file("r2focus/summary.csv",
                    "point,mixer,focus_penalty,answer_supervision,seed,status,best_acc,reached_0.99,steps_to_0.99,selection,"
                    "test_acc,best_recall_layer\n"
                    "\"s,1\",softmax,0,0,1,done,0.995,1,392,,0.996,1\n"
                    "\"f,1\",softmax,0.7,0,1,done,0.991,1,1568,,0.992,1\n"
                    "\"f,2\",softmax,0.7,0,2,done,0.5,0,,,0.51,0\n"
                    "\"l,1\",linear,0,1,1,partial,0.3,0,,,,0\n");
    rc = test_run(out, sizeof out, "sh results/results2.sh results %s %s", dir, fdir);
    CHECK(rc == 0, "%s", out);
    CHECK(strstr(out, "| `softmax` | 2.2e-3 | 1 | 1/1 | 0.9960 |") &&
              strstr(out, "| `softmax` + focus_penalty 0.7 | 2.2e-3 | 2 | 1/2 | 0.9920, 0.5100 |") &&
              !strstr(out, "answer_supervision 1 |"),
          "%s", out);
    rc = test_run(out, sizeof out, "sh results/results2.sh nope %s", dir);
    CHECK(rc == 2, "exit %d: %s", rc, out);
}

// The reading of Results II judged by its rules, on a complete fixture (tests/results2_fixture:
// five variants, three held-out seeds each with their interventions, and a focus-seeds sweep):
// softmax recalls and focuses, DeltaNet recalls from a broad map, elu+1 fails but reads the
// oracle, relu^2 splits, H3 fails with no map in its records (judged on neither); then the same script on an unfinished sweep prints the rules only.
TEST(results2_reading_judges_by_its_rules) {
    static char out[32768];
    int rc = test_run(out, sizeof out,
                      "sh results/results2.sh results tests/results2_fixture/sweep tests/results2_fixture/focus");
    CHECK(rc == 0, "%s", out);
    one_line(out);
    const char *want[] = {
        "Two of the 5 variants recall on every held-out seed: `softmax` at 0.9953 (0.9920, 0.9950, 0.9990) and "
        "`deltanet` at 0.9913",
        "Two fail on every seed: `linear` at 0.3367 (0.2500, 0.5000, 0.2600) and `h3` at 0.6500",
        "Not every held-out seed of `h3` has a recall layer's map in its records; it is judged on neither.",
        "One splits, solving on some seeds only: `relu2` on 2 of 3, at 0.9147 (0.9950, 0.7500, 0.9990) (every seed "
        "reached 0.99 on validation and stopped there; test accuracies 0.7500-0.9990)",
        "Two maps focus: `softmax` with 1.20 effective tokens and 92% of the weight on the answer against a chance of 6%",
        "(and have maps): focused and recall: `softmax`; recall without focus: `deltanet`; focused without recall, none; "
        "neither: `linear`.",
        "Focus as S measures it is not necessary for recall on this cell: `deltanet` recalls from maps of 6.00 effective tokens.",
        "it holds on every seed for `softmax` and `relu2` and costs more on some seed for `deltanet` at 0.957",
        "it holds up to eps (per seed) `softmax` 0.4, 0.4, 0.5 (9.2, 9.2, 11.2 effective tokens there), `deltanet` 0.7, "
        "0.6, 0.6 (13.0, 12.0, 12.0 effective tokens there) and `relu2` 0.3, 0.2, 0.3 (1.7, 1.6, 1.7 effective tokens there).",
        "So the recall of `softmax` and `deltanet` does not need focus: it holds on every seed at a map of more than two "
        "tokens' worth. For `relu2` it stops holding before the map stops focusing on some seed.",
        "`linear` 0.998 (1.000, 0.995, 1.000) on the answer and 1.000 (1.000, 1.000, 1.000) on its window, against 0.337 "
        "(0.250, 0.500, 0.260) as trained",
        "The oracle makes every seed of `linear` solve",
        "The window oracle, not the one on the answer, makes every seed of `relu2` solve.",
        "Neither makes every seed of `h3` solve.",
        "Held broad by the focus penalty, softmax solves on 2 of 3 seeds (0.8307 (0.9920, 0.5100, 0.9900)) with 21.50 "
        "effective tokens",
        "Held broad, softmax does not recall on every seed; one of its seeds ran to the 4000-step cap below 0.99 on "
        "validation (best 0.5000).",
        "Taught the answer, elu+1 linear attention solves on 1 of 3 seeds",
        "and that is not enough to recall on every seed; two of its seeds ran to the 4000-step cap below 0.99 on "
        "validation (best 0.8900, 0.7000).",
        "`deltanet` recalls at 0.9913 (0.9910, 0.9930, 0.9900) with a map that does not focus, 6.00 effective tokens",
        "**Results II is complete** (`./sweep configs/ablations/mqar_results2.sweep`, issue 40;",
        "and the 15 held-out runs each with all",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(strstr(out, want[i]), "missing '%s' in: %s", want[i], out);
    // the held-out table at the last step; a seed without wrong rows keeps its place ("-"), the
    // mean is over the others
    CHECK(strstr(out, "| `softmax` | 394, 395, 396 | L1, L1, L1 | 1.30 (1.20, 1.30, 1.40) | 0.800 (0.800, 0.800, 0.800) |"),
          "the last step's table: %s", out);
    CHECK(strstr(out, "| 0.300 (0.300, 0.300, 0.300) | 0.300 (-, 0.300, 0.300) |"), "the S_recall of wrong rows: %s", out);
    CHECK(!strstr(out, "is running") && !strstr(out, "The focus-seeds sweep (below)"), "%s", out);
    // the sweep complete, the focus-seeds sweep not run: the status says which waits
    rc = test_run(out, sizeof out, "sh results/results2.sh results tests/results2_fixture/sweep %s", test_path("nofocus"));
    one_line(out);
    CHECK(rc == 0 && strstr(out, "**Results II is complete**") &&
              strstr(out,
                     "The focus-seeds sweep (below) has not run yet; its tables and its paragraph of the reading "
                     "follow when it is complete."),
          "%s", out);
    rc = test_run(out, sizeof out, "sh results/results2.sh results tests/results2_fixture/sweep tests/results2_fixture/focus");
    one_line(out);
    rc = test_run(out, sizeof out, "sh results/results2.sh readme tests/results2_fixture/sweep tests/results2_fixture/focus");
    one_line(out);
    CHECK(rc == 0 &&
              strstr(out,
                     "two of the 5 variants recall on every held-out seed; of them `softmax` focuses on two tokens' "
                     "worth of weight or less, and `deltanet` recalls from broader maps (6.00 effective tokens); on only "
                     "some held-out seeds: `relu2` on 2 of 3 (every seed at 0.99 on validation).") &&
              strstr(out,
                     "held broad in training (21.50 effective tokens), softmax solves on 2 of 3 seeds (test "
                     "0.5100-0.9920), and taught the answer, elu+1 linear attention on 1 of 3 (0.7000-0.9910, against "
                     "0.2500-0.2700 untaught).") &&
              !strstr(out, "is running") &&
              strstr(out,
                     "| `relu2` | 1e-2 | 2/3 | 0.9147 (0.9950, 0.7500, 0.9990) | splits, focuses | 1.40 | 0.770 (0.060) | "
                     "0.893 / 0.047 / 0.867 / 1.000 |"),
          "%s", out);
    // unfinished: the pages print the rules and wait; the look marks itself partial
    const char *dir = test_path("r2partial");
    CHECK(mkdir_p(dir) == 0);
    test_write_file("r2partial/summary.csv",
                    "point,mixer,short_conv,lr,seed,status,best_acc,reached_0.99,steps_to_0.99,selection,test_acc,"
                    "best_recall_layer,best_recall_eff_tokens,best_recall_share,best_recall_chance\n"
                    "\"a,0\",softmax,0,1e-2,0,done,0.995,1,392,chosen,0.99,1,1.2,0.9,0.06\n"
                    "\"a,1\",softmax,0,1e-2,1,done,0.995,1,392,,0.995,1,1.2,0.9,0.06\n"
                    "\"a,2\",softmax,0,1e-2,2,partial,,,,,,,,,\n");
    rc = test_run(out, sizeof out, "sh results/results2.sh results %s %s", dir, test_path("r2none"));
    one_line(out);
    CHECK(rc == 0 && strstr(out, "**How the reading judges**") &&
              strstr(out, "(1 of the 2 have, 0 of them with all their interventions)") && !strstr(out, "**Which recall.**"),
          "%s", out);
    rc = test_run(out, sizeof out, "sh results/results2.sh reading %s %s", dir, test_path("r2none"));
    one_line(out);
    CHECK(rc == 0 && strstr(out, "*Partial: 1 of the 2 held-out runs.") &&
              strstr(out, "The focus-seeds sweep has not run yet"),
          "%s", out);
}

// docs/performance.md shows the table `sh SCRIPT ARGS` prints from committed bench records (which
// holds the row `row`), and the script exits 2 naming a missing file (`missing`: its arguments).
static void check_performance_table(const char *script, const char *args, const char *row, const char *missing) {
    static char table[8192];
    int rc = test_run(table, sizeof table, "sh %s %s", script, args);
    CHECK(rc == 0 && strstr(table, row), "%s (exit %d): %s", script, rc, table);
    char *md = read_file_text("docs/performance.md", NULL);
    CHECK(md && strstr(md, table), "docs/performance.md does not show the table %s prints:\n%s", script, table);
    free(md);
    rc = test_run(table, sizeof table, "sh %s %s 2>&1", script, missing);
    CHECK(rc == 2 && strstr(table, "nope.jsonl: not found"), "exit %d: %s", rc, table);
}

// The work-and-speed table (bench/work_table.sh).
TEST(performance_work_table_is_what_work_table_sh_prints) {
    check_performance_table("bench/work_table.sh", "bench/logs/work-2026-11-26-cell.jsonl", "| gated_deltanet | 3 |",
                            "bench/logs/nope.jsonl");
}

// The AVX2 machine's before-and-after table (bench/pair_table.sh).
TEST(performance_pair_table_is_what_pair_table_sh_prints) {
    check_performance_table("bench/pair_table.sh",
                            "bench/logs/avx2-2026-11-27-cell-before.jsonl bench/logs/avx2-2026-11-27-cell-after.jsonl",
                            "| mamba2 | 7 |", "bench/logs/nope.jsonl bench/logs/nope.jsonl");
}

// The interleaved runs' paired table (bench/paired_table.sh).
TEST(performance_paired_table_is_what_paired_table_sh_prints) {
    check_performance_table("bench/paired_table.sh", "bench/logs/avx2-2026-11-27-interleaved-cell-after.jsonl",
                            "| mamba2 | 5 |", "bench/logs/nope.jsonl");
    check_performance_table("bench/paired_table.sh", "bench/logs/avx2-2026-11-27-interleaved-4096.jsonl",
                            "| mamba2 | 2 |", "bench/logs/nope.jsonl");
}

// The Shakespeare side-by-side with PyTorch (bench/text_table.sh from bench/logs/text): docs/text.md
// shows exactly the table the committed logs give; no logs is one line and exit 2.
TEST(text_side_by_side_table_is_what_text_table_sh_prints) {
    const char *const pages[][2] = {{"bench/logs/text", "docs/text.md"}};
    check_blocks("bench/text_table.sh", "text_table.sh", pages, 1, 1);
    static char out[1024];
    int rc = test_run(out, sizeof out, "sh bench/text_table.sh bench/logs/nope 2>&1");
    CHECK(rc == 2 && strstr(out, "bench/logs/nope: no logs"), "exit %d: %s", rc, out);
}

// The char Shakespeare model's sparsity table (results/text_sparsity_table.sh from the trainer's
// committed sparsity.jsonl) is what docs/text.md shows.
TEST(text_sparsity_table_is_what_text_sparsity_table_sh_prints) {
    const char *const pages[][2] = {{"results/shakespeare_char", "docs/text.md"}};
    check_blocks("results/text_sparsity_table.sh", "text_sparsity_table.sh", pages, 1, 1);
}

// Mamba-2's pilot table the same way (results/mamba2_pilot).
TEST(results_mamba2_pilot_table_is_what_pilot_table_sh_prints) {
    static char table[8192];
    int rc = test_run(table, sizeof table, "bash results/pilot_table.sh results/mamba2_pilot");
    CHECK(rc == 0, "results/pilot_table.sh (exit %d): %s", rc, table);
    CHECK(strstr(table, "| `mamba2` |"), "%s", table);
    char *md = read_file_text("docs/results.md", NULL);
    CHECK(md && strstr(md, table), "docs/results.md does not show the table results/pilot_table.sh prints:\n%s", table);
    free(md);
}

// The interventions pilot (issue 38) the same way: its tables and its reading are what
// results/intervention_table.sh and results/focus_table.sh print from the committed records.
TEST(results_intervention_pilot_is_what_its_scripts_print) {
    static const char *scripts[][2] = {{"results/intervention_table.sh", "**Location against concentration.**"},
                                       {"results/intervention_table.sh results/focus_pilot", "| softmax + focus_penalty 1 |"},
                                       {"results/focus_table.sh", "| `softmax` | focus_penalty"}};
    char *md = read_file_text("docs/results.md", NULL);
    CHECK(md, "docs/results.md not found");
    for (int i = 0; md && i < 3; i++) {
        static char out[16384];
        int rc = test_run(out, sizeof out, "bash %s", scripts[i][0]);
        CHECK(rc == 0 && strlen(out) + 1 < sizeof out, "%s (exit %d): %s", scripts[i][0], rc, out);
        CHECK(strstr(out, scripts[i][1]), "%s", out);
        CHECK(strstr(md, out), "docs/results.md does not show what %s prints:\n%s", scripts[i][0], out);
    }
    free(md);
}

// --- references anywhere in the repository -----------------------------------------------------

typedef struct {
    int files, refs, keys;
    const char *docs;  // every docs page, for the key check
    char bad[4096];    // the first problems found, one a line
    size_t bad_len;
} Scan;

static void report(Scan *s, const char *fmt, const char *a, const char *b, const char *c) {
    if (s->bad_len + 300 >= sizeof s->bad) return;
    s->bad_len += (size_t)snprintf(s->bad + s->bad_len, sizeof s->bad - s->bad_len, fmt, a, b, c);
}

static int scanned_name(const char *name) {
    static const char *exts[] = {".c", ".h", ".mk", ".sh", ".conf", ".sweep", ".py", ".md", NULL};
    if (!strcmp(name, "Makefile")) return 1;
    size_t n = strlen(name);
    for (int i = 0; exts[i]; i++) {
        size_t m = strlen(exts[i]);
        if (n > m && !strcmp(name + n - m, exts[i])) return 1;
    }
    return 0;
}

// Checks one reference: a docs page from the root, or a page relative to dir, with an optional anchor.
static void check_target(Scan *s, const char *file, const char *dir, const char *target, size_t n) {
    char t[512], path[1024];
    if (n >= sizeof t) n = sizeof t - 1;
    memcpy(t, target, n);
    t[n] = 0;
    char *hash = strchr(t, '#');
    const char *anchor = "";
    if (hash) *hash = 0, anchor = hash + 1;
    if (*t) snprintf(path, sizeof path, "%s%s", dir, t);
    else snprintf(path, sizeof path, "%s", file);  // "#anchor": this file
    s->refs++;
    size_t pl = strlen(path);
    if (pl < 3 || strcmp(path + pl - 3, ".md")) {  // a figure or another file: it must exist
        struct stat st;
        if (stat(path, &st)) report(s, "%s: '%s': no such file (%s)\n", file, t, path);
        return;
    }
    int exists;
    if (!md_has(path, anchor, &exists)) {
        if (!exists) report(s, "%s: '%s': no such file (%s)\n", file, t, path);
        else report(s, "%s: %s has no heading whose anchor is '#%s'\n", file, path, anchor);
    }
}

// Every `docs/<page>.md[#anchor]` in the text (paths from the repository root), and in markdown
// files every relative link `](target)` (relative to the file).
static void scan_text(Scan *s, const char *file, const char *text) {
    for (const char *p = text; (p = strstr(p, "docs/")); p += 5) {
        const char *q = p + 5;
        while (isalnum((unsigned char)*q) || *q == '_' || *q == '-') q++;
        if (q == p + 5 || strncmp(q, ".md", 3)) continue;
        q += 3;
        if (*q == '#') {
            q++;
            while (isalnum((unsigned char)*q) || *q == '_' || *q == '-') q++;
        }
        check_target(s, file, "", p, (size_t)(q - p));
    }
    size_t fl = strlen(file);
    if (fl < 3 || strcmp(file + fl - 3, ".md")) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = 0;
    else dir[0] = 0;
    int fence = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n >= 3 && !strncmp(line, "```", 3)) fence = !fence;
        for (const char *p = line; !fence && p < line + n && (p = strstr(p, "](")) && p < line + n; p += 2) {
            const char *t = p + 2, *close = t;
            while (close < line + n && *close != ')' && *close != ' ') close++;
            if (close >= line + n || *close != ')') continue;
            if (strstr(t, "://") && strstr(t, "://") < close) continue;  // a web address
            if (!strncmp(t, "mailto:", 7)) continue;
            check_target(s, file, dir, t, (size_t)(close - t));
        }
        line = end ? end + 1 : line + n;
    }
}

// Every repository path a comment of a .c or .h file names ("see model/mixers/gla.c",
// "(tests/layers.sh)") must exist: a path from the root, starting with one of the folders below
// and ending in a file extension. String literals are not comments (tests name files to make).
static void check_comment_path(Scan *s, const char *file, const char *p, const char *end) {
    static const char *roots[] = {"core/",  "data/",  "tokenizer/", "model/",   "trainer/", "eval/", "ablation/",
                                  "bench/", "tests/", "configs/",   "results/", "docs/",    ".ci/",  NULL};
    static const char *exts[] = {".c", ".h", ".md", ".sh", ".mk", ".conf", ".sweep", ".py", ".svg", ".csv", NULL};
    int root = -1;
    for (int i = 0; roots[i]; i++)
        if (!strncmp(p, roots[i], strlen(roots[i]))) root = i;
    if (root < 0) return;
    const char *q = p;
    while (q < end && (isalnum((unsigned char)*q) || strchr("_./-", *q))) q++;
    while (q > p && (q[-1] == '.' || q[-1] == '/')) q--;  // a sentence's full stop
    const char *dot = NULL;
    for (const char *r = p; r < q; r++)
        if (*r == '.' && r > p && r[-1] != '/') dot = r;
    if (!dot) return;  // a folder or a name without extension
    int known = 0;
    for (int i = 0; exts[i]; i++)
        known |= (size_t)(q - dot) == strlen(exts[i]) && !strncmp(dot, exts[i], strlen(exts[i]));
    if (!known || (size_t)(q - p) >= 512) return;
    char path[512];
    snprintf(path, sizeof path, "%.*s", (int)(q - p), p);
    s->refs++;
    struct stat st;
    if (stat(path, &st)) report(s, "%s: a comment names '%s': no such file%s\n", file, path, "");
}

// The comments of C source: each path in them (check_comment_path).
static void scan_comments(Scan *s, const char *file, const char *text) {
    size_t fl = strlen(file);
    if (fl < 3 || (strcmp(file + fl - 2, ".c") && strcmp(file + fl - 2, ".h"))) return;
    for (const char *p = text; *p;) {
        if (*p == '"' || *p == '\'') {  // a string or character literal
            char quote = *p++;
            while (*p && *p != quote && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p == quote) p++;
            continue;
        }
        const char *end = NULL;
        if (p[0] == '/' && p[1] == '/') end = strchr(p, '\n');
        else if (p[0] == '/' && p[1] == '*') end = strstr(p + 2, "*/");
        else {
            p++;
            continue;
        }
        if (!end) end = p + strlen(p);
        for (const char *q = p + 2; q < end; q++)
            if (q == p + 2 || !(isalnum((unsigned char)q[-1]) || strchr("_./-", q[-1])))
                check_comment_path(s, file, q, end);
        p = *end ? end + 1 : end;
    }
}

// Words no file may contain: the design lives in docs/, not in documents outside the repository.
// (Spelled in two pieces so that this file does not match itself.)
static void check_outside_citations(Scan *s, const char *file, const char *text) {
    char design[16], refdir[16];
    snprintf(design, sizeof design, "%s%s", "DESIGN", ".md");
    snprintf(refdir, sizeof refdir, "%s%s", "reference", "/");
    if (strstr(text, design)) report(s, "%s: cites %s (point at docs/<page>.md#<section>)\n", file, design, "");
    if (strstr(text, refdir)) report(s, "%s: cites %s (point at docs/<page>.md#<section>)\n", file, refdir, "");
}

// Calls visit on every scanned file of the repository (build output and checkpoints left out).
typedef void (*Visit)(Scan *s, const char *path, const char *text);
static void walk(Scan *s, const char *dir, int top, Visit visit) {
    DIR *d = opendir(*dir ? dir : ".");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *name = e->d_name;
        if (name[0] == '.' && (!name[1] || !strcmp(name, "..") || !strcmp(name, ".git"))) continue;
        if (top && (!strncmp(name, "build", 5) || !strcmp(name, "checkpoints"))) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s%s", dir, name);
        struct stat st;
        if (stat(path, &st)) continue;
        size_t pl = strlen(path);
        if (S_ISDIR(st.st_mode) && pl + 2 < sizeof path) {
            path[pl] = '/', path[pl + 1] = 0;  // the folder's prefix for its entries
            walk(s, path, 0, visit);
        } else if (S_ISREG(st.st_mode) && scanned_name(name)) {
            char *text = read_file_text(path, NULL);
            if (!text) continue;
            visit(s, path, text);
            free(text);
        }
    }
    closedir(d);
}

static void visit_references(Scan *s, const char *path, const char *text) {
    s->files++;
    scan_text(s, path, text);
    scan_comments(s, path, text);
    check_outside_citations(s, path, text);
}

// Every KeyDef row ({"name", KEY_...}) of a program's .c file (not the tests' own configs).
static void visit_keys(Scan *s, const char *path, const char *text) {
    size_t n = strlen(path);
    if (n < 3 || strcmp(path + n - 2, ".c") || !strncmp(path, "tests/", 6) || !strncmp(path, "results/", 8)) return;
    for (const char *p = text; (p = strstr(p, "{\"")); p += 2) {
        const char *q = p + 2, *start = q;
        while (islower((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_') q++;
        if (q == start || strncmp(q, "\", KEY_", 7)) continue;
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(q - start), start);
        s->keys++;
        if (!docs_name_key(s->docs, key)) report(s, "%s: `%s`%s\n", path, key, "");
    }
}

TEST(docs_references_resolve) {
    CHECK(path_exists("docs/design.md"), "run the tests from the repository root");
    Scan *s = callocCheck(1, sizeof *s);
    walk(s, "", 1, visit_references);
    CHECK(s->bad_len == 0, "%d files, %d references; broken:\n%s", s->files, s->refs, s->bad);
    CHECK(s->files >= 50 && s->refs >= 50, "only %d files and %d references scanned", s->files, s->refs);
    free(s);
}

// Every key of every program is named on some docs page: the training config's (above) and the
// bench's, the tokenizer's, the evaluator's, ...
TEST(docs_name_every_key_of_every_program) {
    DIR *d = opendir("docs");
    CHECK(d, "run the tests from the repository root (no docs/)");
    size_t len = 0;
    char *docs = callocCheck(1, 1);
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".md")) continue;
        char path[600];
        snprintf(path, sizeof path, "docs/%s", e->d_name);
        char *md = read_file_text(path, NULL);
        size_t m = md ? strlen(md) : 0;
        docs = reallocCheck(docs, len + m + 2);
        memcpy(docs + len, md ? md : "", m);
        len += m;
        docs[len++] = '\n';
        docs[len] = 0;
        free(md);
    }
    closedir(d);
    Scan *s = callocCheck(1, sizeof *s);
    s->docs = docs;
    walk(s, "", 1, visit_keys);
    CHECK(s->bad_len == 0, "keys no docs page names:\n%s", s->bad);
    CHECK(s->keys >= 100, "only %d keys found", s->keys);
    CHECK(docs_name_key("a `bench_steps` b", "bench_steps") && docs_name_key("[documents=files]", "documents") &&
          !docs_name_key("5 documents (blank-line)", "documents") && !docs_name_key("`my_bench_steps`", "bench_steps"));
    free(s);
    free(docs);
}

// The checker itself: anchors as GitHub makes them, and a broken reference is reported.
TEST(docs_anchor_rules) {
    char a[128];
    const char *h = "Attention sparsity S(a) and `./evaluate`";
    anchor_of(h, strlen(h), a, sizeof a);
    CHECK(!strcmp(a, "attention-sparsity-sa-and-evaluate"), "%s", a);
    char *anchors = md_anchors("# T\n## sparsity.jsonl\n```\n## not a heading\n```\n## A b\n### A b\n");
    CHECK(!strcmp(anchors, "\nt\nsparsityjsonl\na-b\na-b-1\n"), "%s", anchors);
    free(anchors);
    Scan *s = callocCheck(1, sizeof *s);
    scan_text(s, "x.c",
              "see "
              "docs"
              "/design.md#no-such-heading and "
              "docs"
              "/nope.md");
    CHECK(s->refs == 2 && strstr(s->bad, "no-such-heading") && strstr(s->bad, "nope.md"), "%s", s->bad);
    free(s);
    // paths in comments: a missing one is reported, one in a string literal or without a root is not
    s = callocCheck(1, sizeof *s);
    scan_comments(s, "x.c",
                  "int a; // see "
                  "model"
                  "/nope.c and core/io.h.\n"
                  "char *t = \"model"
                  "/string.c\"; /* (tests/layers.sh) gla.c model/ */\n");
    CHECK(s->refs == 3 && strstr(s->bad, "model/nope.c") && !strstr(s->bad, "string.c"), "%d refs: %s", s->refs, s->bad);
    free(s);
}
