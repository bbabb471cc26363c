// The machine's measured arithmetic peak, for the benches' "% of peak" columns: independent FMA
// chains on every thread (fp32 FMA, and bf16 dot products where the CPU has AVX512-BF16).
#pragma once

// GFLOP/s of the fp32 FMA loop on nthreads threads (best of reps runs of iters iterations);
// *kind names the instruction set used ("AVX-512", "AVX2", "scalar C").
double peak_fp32_iters(int nthreads, const char **kind, long iters, int reps);
// ~0.3 s: the figure to report.
double peak_fp32(int nthreads, const char **kind);
// ~20 ms: to check that the host is quiet right before and after a timing.
double peak_fp32_quick(int nthreads);
// GFLOP/s of vdpbf16ps chains (a multiply-add of bf16 pairs counts 2 flops per product), or 0
// when the CPU lacks AVX512-BF16.
double peak_bf16(int nthreads);
// Wall-clock seconds (monotonic).
double peak_now(void);
