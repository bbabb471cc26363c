// Flush denormals to zero (FTZ/DAZ on x86, FZ on arm64) in the calling thread and every OpenMP
// thread. Denormal arithmetic is up to 100x slower and appears in small gradients late in training.
#pragma once
void fpu_flush_denormals(void);
