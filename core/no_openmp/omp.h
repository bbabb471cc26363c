// <omp.h> for a build without OpenMP (`make NO_OMP=1`, or no OpenMP found, e.g. Apple clang
// without Homebrew's libomp): the Makefile puts this folder on the include path only then, so
// every `#include <omp.h>` in the sources finds it. The build is single-threaded: the compiler
// ignores `#pragma omp parallel` (-Wno-unknown-pragmas) and still vectorises the `#pragma omp
// simd` loops (-fopenmp-simd needs no runtime). One thread, so `threads = N` has no effect.
#pragma once

static inline int omp_get_max_threads(void) { return 1; }
static inline int omp_get_num_threads(void) { return 1; }
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_in_parallel(void) { return 0; }
static inline void omp_set_num_threads(int n) { (void)n; }
