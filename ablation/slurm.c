#include "ablation/slurm.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/runlog.h"

// The part of the script that is the same for every sweep: it runs the task's point the way
// ./sweep runs one (log header, output appended to train.log, stdin from /dev/null) and reports
// in the task's Slurm output with ./sweep's words. A finished point is one whose metrics.jsonl
// ends with the {"type":"done"} record (run_finished).
static const char *task_body =
    "log=$dir/train.log\n"
    "took() {\n"
    "    local t=$(( $(date +%s) - start ))\n"
    "    if [ $t -ge 3600 ]; then printf '%dh%02dm' $((t / 3600)) $((t / 60 % 60))\n"
    "    elif [ $t -ge 60 ]; then printf '%dm%02ds' $((t / 60)) $((t % 60))\n"
    "    else printf '%ds' $t; fi\n"
    "}\n"
    "tag=\"[$n/$n_points] $point\"\n"
    "if finished; then\n"
    "    echo \"$tag: finished before, skipped\"\n"
    "    exit 0\n"
    "fi\n"
    "mkdir -p \"$dir\" || exit 1\n"
    "printf '== sweep %s, point %d/%d, %s, Slurm job %s:\\n%s\\n' \"$sweep\" \"$n\" \"$n_points\" \\\n"
    "    \"$(date '+%Y-%m-%d %H:%M:%S')\" \"${SLURM_ARRAY_JOB_ID:-?}_${SLURM_ARRAY_TASK_ID}\" \"$cmd\" >> \"$log\" || exit 1\n"
    "echo \"$tag: started on ${SLURMD_NODENAME:-$HOSTNAME}\"\n"
    "start=$(date +%s)\n"
    "# A time limit or scancel sends SIGTERM to every process of the task: ./train saves a checkpoint\n"
    "# and stops; this shell waits for it (a trapped signal, unlike an unhandled one, lets it) to say so.\n"
    "trap : TERM\n"
    "eval \"set -- $cmd\"\n"
    "\"$@\" >> \"$log\" 2>&1 < /dev/null\n"
    "status=$?\n"
    "if [ $status -eq 0 ] && finished; then\n"
    "    echo \"$tag: done in $(took)\"\n"
    "elif [ $status -eq 0 ]; then\n"
    "    echo \"$tag: stopped before the end in $(took) (submit again to continue)\"\n"
    "elif [ $status -eq 130 ] || [ $status -eq 143 ]; then\n"
    "    echo \"$tag: interrupted after $(took) (submit again to continue)\"\n"
    "else\n"
    "    echo \"$tag: FAILED (exit $status) after $(took): $(tail -n 1 \"$log\") (log: $log)\"\n"
    "fi\n"
    "exit $status\n";

void slurm_write_script(const SlurmArray *a, FILE *f) {
    const SweepFile *sw = a->sw;
    time_t now = time(NULL);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
    fprintf(f, "#!/bin/bash\n");
    fprintf(f, "# The sweep %s as a Slurm job array: a task per point not finished on %s (%d of %d),\n", sw->name, when,
            a->n, sw->n_points);
    fprintf(f, "# written by: %s\n", a->written_by);
    fprintf(f,
            "# Submit it with sbatch (from any folder). Submitting it again is safe: a finished point's task\n"
            "# exits at once and an interrupted one resumes from its checkpoint.\n");
    fprintf(f, "# When the tasks are done, the summary: %s\n", a->collect);
    fprintf(f, "#SBATCH --job-name=");
    for (const char *c = sw->name; *c; c++) fputc(*c == ' ' ? '_' : *c, f);
    fprintf(f, "\n#SBATCH --array=1-%d", a->n);
    if (a->throttle > 0) fprintf(f, "%%%d", a->throttle);
    fprintf(f, "\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%d\n", a->cpus);
    // sbatch reads these lines as they are, without a shell: paths with spaces would not work
    fprintf(f, "#SBATCH --chdir=%s\n", a->workdir);
    fprintf(f, "#SBATCH --output=%s/%%A_%%a.out\n", a->log_dir);
    fprintf(f, "set -u\n");
    fprintf(f, "sweep=");
    sweep_print_arg(sw->name, f);
    fprintf(f, "\nn_points=%d\n", sw->n_points);
    fprintf(f, "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n");
    for (int k = 0; k < a->n; k++) {
        int p = a->points[k];
        char *dir = sweep_point_dir(sw, p);
        char *line = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&line, &len);
        sweep_print_command(a->argv[k], m);
        fclose(m);
        if (len > 0 && line[len - 1] == '\n') line[len - 1] = 0;
        fprintf(f, "%d) n=%d point=", k + 1, p + 1);
        sweep_print_arg(sw->point_names[p], f);
        fprintf(f, " dir=");
        sweep_print_arg(dir, f);
        fprintf(f, "\n   cmd=");
        sweep_print_arg(line, f);
        fprintf(f, " ;;\n");
        free(line);
        free(dir);
    }
    fprintf(f,
            "*) echo \"task '${SLURM_ARRAY_TASK_ID:-}': expected 1 to %d (submit this script with sbatch)\" >&2\n"
            "   exit 2 ;;\nesac\n",
            a->n);
    // the done record's pattern is the run log's (core/runlog.h)
    fprintf(f, "finished() { tail -n 1 \"$dir/metrics.jsonl\" 2>/dev/null | grep -Eq '%s'; }\n", runlog_done_regex());
    fputs(task_body, f);
}
