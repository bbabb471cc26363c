// The documentation follows the code: docs/config.md documents every config key, docs/mixers.md
// has a section for every registered mixer, and the README links every docs page.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"
#include "core/keys.h"
#include "model/mixers/mixer.h"
#include "tests/test.h"

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
        CHECK(table_row_names(md, c.keys[i]->name), "docs/config.md has no table row for the key `%s`",
              c.keys[i]->name);
    free(md);
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
