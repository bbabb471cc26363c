// A sweep as a Slurm job array (docs/sweeps-engines.md#slurm): `./sweep F --slurm` writes one
// bash script for sbatch with a task per point that is not finished yet. Each task runs its
// point's ./train command (the one --print writes) with the output appended to the point's
// train.log, as ./sweep does. A task whose point is finished exits at once, so the script can be
// submitted again after a failure, a time limit or a cancel; an interrupted point resumes.
#pragma once
#include <stdio.h>

#include "ablation/sweep_file.h"

typedef struct {
    const SweepFile *sw;
    const int *points;  // [n] the points that get a task, in order (task k runs points[k-1])
    int n;
    char ***argv;            // [n] each task's ./train command (sweep_point_argv)
    int cpus;                // --cpus-per-task
    int throttle;            // at most this many tasks at once (sbatch --array=...%N); 0: no limit
    const char *workdir;     // absolute: the folder the commands' relative paths start from
    const char *log_dir;     // absolute: where Slurm writes each task's own output
    const char *collect;     // the command that builds the summary afterwards
    const char *written_by;  // the command that wrote the script
} SlurmArray;

// Writes the sbatch script.
void slurm_write_script(const SlurmArray *a, FILE *f);
