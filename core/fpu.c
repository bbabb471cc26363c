#include "core/fpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static void flush_this_thread(void) { _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ | DAZ */ }
#elif defined(__aarch64__)
#include <stdint.h>
static void flush_this_thread(void) {
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ volatile("msr fpcr, %0" ::"r"(fpcr | (1ull << 24)));  // FZ
}
#else
static void flush_this_thread(void) {}
#endif

void fpu_flush_denormals(void) {
    flush_this_thread();
#pragma omp parallel
    flush_this_thread();
}
