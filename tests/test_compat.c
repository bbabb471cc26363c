// Runs written by older versions (tests/compat/, made by tests/compat/make_*.sh with the programs
// of the commit in the folder's name) resume and finish with today's programs. A later key rename
// or default change must keep this passing: resume compares only the keys that shape the run
// (model_resume_difference: not the options of a mixer the run does not use), and a renamed key
// still reads its old name (core/config.c's g_renamed_keys).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "tests/test.h"

// d341175 wrote h3_head_dim = 1 (the default then, 2 since d1754ad) into every checkpoint's
// config, softmax runs too: their resume was refused ("h3_head_dim is '1' in the checkpoint but
// '2' now"), by any spelling, and a current ./sweep failed every unfinished point of an old sweep.
TEST(compat_d341175_run_and_half_finished_sweep_resume_and_finish) {
    char out[16384], cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd));
    const char *d = test_tmpdir();
    int st = test_run(out, sizeof out, "cp -r tests/compat/d341175 %s/a && cp -r tests/compat/d341175 %s/b", d, d);
    CHECK(st == 0, "%s", out);
    // the unfinished point's run folder, resumed by hand with the command the old sweep ran
    st = test_run(out, sizeof out, "cd %s/a && %s/train b.conf seed=2 out_dir=checkpoints/s/seed=2", d, cwd);
    CHECK(st == 0 && strstr(out, "resuming from checkpoints/s/seed=2/ckpt_00000002.safetensors (step 2)"),
          "exit %d: %s", st, out);
    char *log = read_file_text(test_path("a/checkpoints/s/seed=2/metrics.jsonl"), NULL);
    CHECK(log && strstr(log, "{\"type\":\"done\",\"step\":4"), "%s", log);
    free(log);
    // the old sweep: the finished point is skipped, the other resumed and finished
    st = test_run(out, sizeof out, "cd %s/b && %s/sweep s.sweep --threads 1", d, cwd);
    CHECK(st == 0 && strstr(out, "1 run, 1 skipped (finished before), 0 failed"), "exit %d: %s", st, out);
    char *csv = read_file_text(test_path("b/checkpoints/s/summary.csv"), NULL);
    CHECK(csv && strstr(csv, "seed=1,1,softmax,done,,4,") && strstr(csv, "seed=2,2,softmax,done,,4,"), "%s", csv);
    free(csv);
}
