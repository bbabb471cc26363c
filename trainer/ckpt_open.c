// Opening a trained model (ckpt_open.h).
#include "trainer/ckpt_open.h"

#include "core/io.h"
#include "core/run_dir.h"
#include "trainer/checkpoint.h"

char *ckpt_resolve(const char *arg) {
    if (!is_directory(arg)) {
        if (!path_exists(arg)) die_input("%s: cannot open (no such file)", arg);
        return strdupCheck(arg);
    }
    char *ckpt = run_dir_latest(arg);
    if (!ckpt) {
        char **paths;
        long *steps;
        int n = run_dir_checkpoints(arg, &paths, &steps);
        if (n) ckpt = strdupCheck(paths[n - 1]);
        run_dir_free_list(paths, steps, n);
    }
    if (!ckpt) die_input("%s: no checkpoint in this folder", arg);
    return ckpt;
}

Model *ckpt_open_model(const char *path, Config *cfg, int B, int rows_max, TrainState *ts) {
    char err[1024];
    long step;
    if (ckpt_read_config(path, cfg, &step, err, sizeof err) != 0) die_input("%s: %s", path, err);
    ModelShape s = model_shape_from_config(cfg, (int)cfg_int(cfg, "vocab_size"));
    if (s.V <= 0) die_input("%s: the checkpoint's config has no vocab_size", path);
    Model *m = model_create(&s, NULL, cfg, B, rows_max);  // the mixers from the config (a hybrid lists them)
    if (ckpt_load(path, m, NULL, ts, err, sizeof err) != 0) die_input("%s: %s", path, err);
    return m;
}
