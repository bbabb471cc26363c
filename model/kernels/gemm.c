// clang-format off
// (the whole file: kernels built by macros, which clang-format 14 misreads; .clang-format)
// General matrix multiply: packed, cache-blocked, register-tiled; OpenMP over tiles of C.
//
// Per block of C (BLIS-like loop nest; micro-kernel contract in model/kernels/gemm_kernels.h):
//   for each N block of NC columns:
//     for each K block of KC:                   (first block starts from 0 or C, later ones from C)
//       pack op(B)[KC, NC] into NR-wide panels  (transB = 1: transposed; transB = 0 with rows
//                                                <= 4 KB apart: read in place instead; the
//                                                partial panel at the N edge: zero padded)
//       for each MR-row micro-panel of op(A):   (read in place, prefetched one panel ahead;
//                                                the partial panel at the M edge: run in place
//                                                by an edge kernel of its rows where the
//                                                variant has one (AVX2), else packed;
//                                                A^T rows a page apart: packed in blocks)
//         for each NR-wide panel of B:          micro-kernel on one MR x NR tile of C
// A is not packed: for transA = 0 the kernel broadcasts from MR rows of A, for transA = 1 from
// MR consecutive values of a row of A^T (unless those rows are a page or more apart: then blocks
// of A_PACK_PANELS micro-panels are packed, once per K block). The next K block of B is
// prefetched into L2 while the current one is used, and the next C tile when it is to be read
// (beta = 1 or later K blocks).
// The register tile (MR x NR) is chosen per call among the ISA's variants by the padding it
// wastes on M and N (model/kernels/gemm_x86.c: AVX-512 14x32, 12x32, 8x32, 6x64, 16x16; AVX2 6x16;
// model/kernels/gemm_neon.c: NEON 8x12, 12x8, 4x16 in float, half as wide in double).
//
// Determinism: every C element is one sequential FMA chain over k = 0..K-1 starting from
// beta*C, whatever the tiling, the blocking and the thread count. gemm splits C into disjoint
// blocks of whole tiles (never K), so it is bit-identical to gemm_serial for any thread count.
#include "model/kernels/gemm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernels/gemm_kernels.h"

#ifdef _OPENMP
#include <omp.h>
#else
static int omp_in_parallel(void) { return 0; }
static int omp_get_max_threads(void) { return 1; }
static int omp_get_num_threads(void) { return 1; }
static int omp_get_thread_num(void) { return 0; }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p, rw, loc) __builtin_prefetch((p), (rw), (loc))
#else
#define PREFETCH(p, rw, loc) ((void)(p))
#endif

GemmTuning gemm_tuning;

// ---------------------------------------------------------------------------------------------
// Portable micro-kernels (any C11 compiler; the double build uses them except on arm64). With
// GCC/Clang they use generic vector extensions (SSE/AVX/NEON... whatever the target has), else
// plain loops that the compiler may vectorize. With FMA hardware and -ffp-contract=fast the
// update is an FMA.

#if defined(__AVX__)
#define PV_BYTES 32  // 16 ymm registers: 12 accumulators of 6 x 2 vectors fit
#else
#define PV_BYTES 16  // SSE2, NEON, ...
#endif
#define PV (PV_BYTES / (int)sizeof(real))  // reals per vector

#if defined(__GNUC__) || defined(__clang__)
typedef real pvec __attribute__((vector_size(PV_BYTES)));
// (Macros, not functions: passing vectors by value may warn about the ABI.)
#define PV_LOAD(v, p) memcpy(&(v), (p), sizeof(pvec))
#define PV_STORE(p, v) memcpy((p), &(v), sizeof(pvec))

#define PORTABLE_BODY(MR, NV, AIDX)                                                               \
    pvec acc[MR][NV];                                                                             \
    for (int r = 0; r < MR; r++)                                                                  \
        for (int v = 0; v < NV; v++) {                                                            \
            acc[r][v] = (pvec){0};                                                                \
            if (load) PV_LOAD(acc[r][v], c + r * ldc + v * PV);                                   \
        }                                                                                         \
    for (int k = 0; k < K; k++) {                                                                 \
        pvec bv[NV];                                                                              \
        for (int v = 0; v < NV; v++) PV_LOAD(bv[v], b + (ptrdiff_t)k * sb + v * PV);              \
        for (int r = 0; r < MR; r++) {                                                            \
            const real ar = a[AIDX];                                                              \
            for (int v = 0; v < NV; v++) acc[r][v] += ar * bv[v];                                 \
        }                                                                                         \
    }                                                                                             \
    for (int r = 0; r < MR; r++)                                                                  \
        for (int v = 0; v < NV; v++) PV_STORE(c + r * ldc + v * PV, acc[r][v]);
#else
#define PORTABLE_BODY(MR, NV, AIDX)                                                               \
    real acc[MR][NV * PV];                                                                        \
    for (int r = 0; r < MR; r++)                                                                  \
        for (int j = 0; j < NV * PV; j++) acc[r][j] = load ? c[r * ldc + j] : (real)0;            \
    for (int k = 0; k < K; k++) {                                                                 \
        const real *bk = b + (ptrdiff_t)k * sb;                                                 \
        for (int r = 0; r < MR; r++) {                                                            \
            const real ar = a[AIDX];                                                              \
            for (int j = 0; j < NV * PV; j++) acc[r][j] += ar * bk[j];                            \
        }                                                                                         \
    }                                                                                             \
    for (int r = 0; r < MR; r++)                                                                  \
        for (int j = 0; j < NV * PV; j++) c[r * ldc + j] = acc[r][j];
#endif

#define DEF_PORTABLE(MR, NV, COST)                                                                \
    static void kp_row_##MR##x##NV(int K, const real *a, ptrdiff_t sa, const real *an,            \
                                   const real *b, ptrdiff_t sb, real *c, ptrdiff_t ldc, int load) {             \
        (void)an;                                                                                 \
        PORTABLE_BODY(MR, NV, r * sa + k)                                                         \
    }                                                                                             \
    static void kp_col_##MR##x##NV(int K, const real *a, ptrdiff_t sa, const real *an,            \
                                   const real *b, ptrdiff_t sb, real *c, ptrdiff_t ldc, int load) {             \
        (void)an;                                                                                 \
        PORTABLE_BODY(MR, NV, (ptrdiff_t)k * sa + r)                                              \
    }                                                                                             \
    static const GemmKernel kp_##MR##x##NV = {                                                    \
        .name = "portable_" #MR "x" #NV, .mr = MR, .nr = NV * PV, .kc = 256, .nc = 512,           \
        .cost = COST, .row = kp_row_##MR##x##NV, .col = kp_col_##MR##x##NV, .packbt = NULL,       \
    };

DEF_PORTABLE(6, 2, 1.0)
DEF_PORTABLE(4, 1, 1.3)

const GemmKernel *const gemm_kernels_portable[] = {&kp_6x2, &kp_4x1, NULL};

// ---------------------------------------------------------------------------------------------
// Kernel selection.

static const GemmKernel *const *g_list;      // the selected table (NULL: the best supported)
static const GemmKernel *g_forced[2];        // a single forced variant (as a table)
static const char *g_name;                   // the selection's name

// ISAs: 0 portable, 1 AVX2+FMA, 2 AVX-512, 3 NEON (every AArch64 CPU has it).
static int isa_supported(int isa) {
#ifdef GEMM_HAVE_X86
    __builtin_cpu_init();
    if (isa == 2)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("fma");
    if (isa == 1) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
#ifdef GEMM_HAVE_NEON
    if (isa == 3) return 1;
#endif
    return isa == 0;
}

// The x86 kernels carry their own target attributes, so the CPU alone would decide; the default
// is also held to the build's -march (an x86-64-v3 build stands for an AVX2 laptop).
static const GemmKernel *const *best_list(const char **name) {
#ifdef GEMM_HAVE_X86
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__FMA__)
    if (isa_supported(2)) return *name = "avx512", gemm_kernels_avx512;
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (isa_supported(1)) return *name = "avx2", gemm_kernels_avx2;
#endif
#endif
#ifdef GEMM_HAVE_NEON
    return *name = "neon", gemm_kernels_neon;
#endif
    return *name = "portable", gemm_kernels_portable;
}

const char *gemm_build_isa(void) {
#if defined(__x86_64__)
#if defined(__AVX512F__)
    return "x86-64 AVX-512F";
#elif defined(__AVX2__) && defined(__FMA__)
    return "x86-64 AVX2+FMA";
#elif defined(__AVX__)
    return "x86-64 AVX";
#else
    return "x86-64 SSE2";
#endif
#elif defined(__aarch64__) && defined(__ARM_NEON)
    return "arm64 NEON";
#else
    return "generic C";
#endif
}

const GemmKernel *gemm_select_kernel(const char *name) {
    const GemmKernel *const *list = NULL;
    const char *lname = name;
    if (!name) list = best_list(&lname);
    const struct { const char *name; int isa; const GemmKernel *const *list; } tables[] = {
        {"portable", 0, gemm_kernels_portable},
#ifdef GEMM_HAVE_X86
        {"avx2", 1, gemm_kernels_avx2},
        {"avx512", 2, gemm_kernels_avx512},
#endif
#ifdef GEMM_HAVE_NEON
        {"neon", 3, gemm_kernels_neon},
#endif
    };
    for (size_t t = 0; !list && t < sizeof tables / sizeof tables[0]; t++) {
        if (!isa_supported(tables[t].isa)) continue;
        if (!strcmp(name, tables[t].name)) list = tables[t].list;
        for (int i = 0; !list && tables[t].list[i]; i++)
            if (!strcmp(name, tables[t].list[i]->name)) {
                g_forced[0] = tables[t].list[i], g_forced[1] = NULL;
                list = g_forced;
            }
    }
    if (!list) return NULL;
    g_list = list, g_name = lname;
    return list[0];
}

// No lazily initialised global: without a selection every call asks the CPU again (cheap: the
// feature bits are read once at start-up), so concurrent first calls cannot race.
static const GemmKernel *const *current_list(void) {
    const char *name;
    return g_list ? g_list : best_list(&name);
}

const char *gemm_kernel_name(void) {
    const char *name = g_name;
    if (!g_list) best_list(&name);
    return name;
}

// The variant with the least padded work: ceil(M/mr)*mr * ceil(N/nr)*nr * cost.
const GemmKernel *gemm_kernel_for(int M, int N) {
    const GemmKernel *const *l = current_list();
    const GemmKernel *best = l[0];
    double best_cost = -1;
    for (int i = 0; l[i]; i++) {
        double m = (double)((M + l[i]->mr - 1) / l[i]->mr * l[i]->mr);
        double n = (double)((N + l[i]->nr - 1) / l[i]->nr * l[i]->nr);
        double cost = m * n * l[i]->cost;
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = l[i];
    }
    return best;
}

// ---------------------------------------------------------------------------------------------
// Per-thread scratch (packed B block, packed edge panel of A, edge tile of C), grown on demand.

static _Thread_local real *tl_scratch;
static _Thread_local size_t tl_scratch_n;

static real *scratch(size_t n) {
    if (n > tl_scratch_n) {
        free(tl_scratch);
        size_t bytes = (n * sizeof(real) + 63) & ~(size_t)63;
        tl_scratch = aligned_alloc(64, bytes);
        tl_scratch_n = tl_scratch ? n : 0;
    }
    return tl_scratch;
}

// ---------------------------------------------------------------------------------------------
// Packing.

// op(B)[0..kc, 0..nc) (B points at op(B)(0,0)) into panels of nr columns: panel p holds
// dst[p*kc*nr + k*nr + j] = op(B)(k, p*nr + j), zero for columns >= nc.
static void pack_b(const GemmKernel *kd, int tB, const real *B, ptrdiff_t ldb, int kc, int nc,
                   real *dst) {
    const int nr = kd->nr;
    for (int jp = 0; jp < nc; jp += nr) {
        const int nv = nc - jp < nr ? nc - jp : nr;
        real *d = dst + (size_t)jp * kc;
        if (!tB) {
            const real *s = B + jp;
            if (nv == nr) {
                for (int k = 0; k < kc; k++) memcpy(d + (size_t)k * nr, s + k * ldb, sizeof(real) * nr);
            } else {
                for (int k = 0; k < kc; k++) {
                    for (int j = 0; j < nv; j++) d[(size_t)k * nr + j] = s[k * ldb + j];
                    for (int j = nv; j < nr; j++) d[(size_t)k * nr + j] = 0;
                }
            }
        } else if (kd->packbt) {
            kd->packbt(kc, nv, B + jp * ldb, ldb, d);
        } else {
            for (int j = 0; j < nv; j++) {
                const real *s = B + (jp + j) * ldb;
                for (int k = 0; k < kc; k++) d[(size_t)k * nr + j] = s[k];
            }
            for (int j = nv; j < nr; j++)
                for (int k = 0; k < kc; k++) d[(size_t)k * nr + j] = 0;
        }
    }
}

// A block of op(A) = A^T (rows i0..i0+m, k 0..kc; A points at A^T's (0, 0), k row k at A + k lda)
// as consecutive micro-panels dst[p*kc*mr + k*mr + r] = A[k*lda + p*mr + r], zero for
// p*mr + r >= m: each k row's m values are read once, in whole lines, 8 k rows prefetched ahead.
#define A_PACK_PANELS 8
static void pack_a_block(const real *A, ptrdiff_t lda, int kc, int m, int mr, real *dst) {
    const int np = (m + mr - 1) / mr, full = m / mr;
    const size_t pstride = (size_t)kc * mr;
    for (int k = 0; k < kc; k++) {
        const real *s = A + k * lda;
        if (k + 8 < kc)
            for (int j = 0; j < m; j += 64 / (int)sizeof(real)) PREFETCH(s + 8 * lda + j, 0, 3);
        real *d = dst + (size_t)k * mr;
        // (a copy of a constant size is a few moves; of a variable one, a call to memcpy)
#define COPY_PANELS(MR)                                                                           \
    for (int p = 0; p < full; p++) memcpy(d + p * pstride, s + p * (MR), sizeof(real) * (MR));
        switch (mr) {
        case 4: COPY_PANELS(4) break;
        case 6: COPY_PANELS(6) break;
        case 8: COPY_PANELS(8) break;
        case 12: COPY_PANELS(12) break;
        case 14: COPY_PANELS(14) break;
        case 16: COPY_PANELS(16) break;
        default: COPY_PANELS(mr)
        }
#undef COPY_PANELS
        if (full < np) {
            const int rv = m - full * mr;
            for (int r = 0; r < mr; r++) d[full * pstride + r] = r < rv ? s[full * mr + r] : 0;
        }
    }
}

// An edge micro-panel of op(A) (mv < mr rows) into dst[k*mr + r]; rows >= mv are zero.
static void pack_a(int tA, const real *A, ptrdiff_t lda, int kc, int mv, int mr, real *dst) {
    if (tA) {
        pack_a_block(A, lda, kc, mv, mr, dst);  // one partial panel
        return;
    }
    memset(dst, 0, sizeof(real) * (size_t)kc * mr);
    for (int r = 0; r < mv; r++)
        for (int k = 0; k < kc; k++) dst[(size_t)k * mr + r] = A[r * lda + k];
}

// ---------------------------------------------------------------------------------------------
// The serial blocked driver on one block of C (pointers already offset to the block).

static void gemm_block(const GemmKernel *kd, int tA, int tB, int M, int N, int K, const real *A,
                       ptrdiff_t lda, const real *B, ptrdiff_t ldb, int beta1, real *C,
                       ptrdiff_t ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        if (!beta1)
            for (int i = 0; i < M; i++) memset(C + i * ldc, 0, sizeof(real) * (size_t)N);
        return;
    }
    const int mr = kd->mr, nr = kd->nr;
    // K block: the variant's, but at most 256 when the kernel walks A^T rows a page or more
    // apart (each k is another page: the TLB runs out first).
    int KC = gemm_tuning.kc > 0 ? gemm_tuning.kc : kd->kc;
    if (gemm_tuning.kc <= 0 && tA && lda * (ptrdiff_t)sizeof(real) >= 4096 && KC > 256) KC = 256;
    const int NC = gemm_tuning.nc > 0 ? (gemm_tuning.nc + nr - 1) / nr * nr : kd->nc;
    const int prefetch = !gemm_tuning.no_prefetch;

    const int direct_b = !tB && (gemm_tuning.direct_b == 2 ||
                                 (gemm_tuning.direct_b == 0 && ldb * (ptrdiff_t)sizeof(real) <= 4096));
    // A^T rows a page or more apart (the LM head's dwte = dlogits^T h: 32 KB apart) put every k
    // of a micro-panel in one cache set, more lines than L1's or L2's ways hold, so each of the
    // N / nr kernel calls on the panel read its K lines from L3 again. Such A is packed instead,
    // A_PACK_PANELS micro-panels at a time (a k row's block of rows in whole lines), once per K
    // block. The kernel runs the same FMA chain on packed panels: the same bits.
    const int pack_ta = tA && lda * (ptrdiff_t)sizeof(real) >= 4096;
    const gemm_kern_fn *edge = tA ? kd->edge_col : kd->edge_row;  // the variant's M-edge kernels, if any
    const int kc_max = K < KC ? K : KC;
    const int nc_max = N < NC ? (N + nr - 1) / nr * nr : NC;
    const size_t nb = (size_t)kc_max * nc_max, nt = (size_t)mr * nr;
    const size_t na = (size_t)kc_max * mr * (pack_ta ? A_PACK_PANELS : 1);
    real *bp = scratch(nb + na + nt);
    if (!bp) {  // out of memory: a plain loop in the same order (k ascending from beta*C)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                real s = beta1 ? C[i * ldc + j] : 0;
                for (int k = 0; k < K; k++)
                    s += (tA ? A[k * lda + i] : A[i * lda + k]) * (tB ? B[j * ldb + k] : B[k * ldb + j]);
                C[i * ldc + j] = s;
            }
        return;
    }
    real *ap = bp + nb, *ct = ap + na;
    // A micro-panel (rows ir.., k pc..) in place: row layout for transA = 0, column layout else.
#define A_PANEL(ir, pc) (tA ? A + (pc) * lda + (ir) : A + (ir) * lda + (pc))

    for (int jc = 0; jc < N; jc += NC) {
        const int ncur = N - jc < NC ? N - jc : NC;
        for (int pc = 0; pc < K; pc += KC) {
            const int kcur = K - pc < KC ? K - pc : KC;
            const int load = pc > 0 || beta1;
            const real *bblk = tB ? B + jc * ldb + pc : B + pc * ldb + jc;
            // B in place (transB = 0, rows close enough for the TLB) or packed; the partial
            // panel at the N edge is always packed (zero padded).
            const int ndirect = direct_b ? ncur / nr * nr : 0;
            pack_b(kd, tB, tB ? bblk + ndirect * ldb : bblk + ndirect, ldb, kcur, ncur - ndirect,
                   bp);
            // Prefetch (to L2) of the next K block of B, spread over this block's kernel calls.
            const int pc2 = pc + KC, k2 = K - pc2 < KC ? K - pc2 : KC;
            const real *bnext = pc2 >= K ? B : tB ? B + jc * ldb + pc2 : B + pc2 * ldb + jc;
            const int nrows = tB ? ncur : k2, rowlen = tB ? k2 : ncur;  // as stored
            const int lines_per_row = (int)((rowlen * sizeof(real) + 63) / 64);
            const long nlines = prefetch && pc2 < K ? (long)nrows * lines_per_row : 0;
            const long ncalls = (long)((M + mr - 1) / mr) * ((ncur + nr - 1) / nr);
            const long per_call = (nlines + ncalls - 1) / ncalls;
            long line = 0;
            ptrdiff_t pf_row = 0;
            int pf_col = 0;

            for (int ir = 0; ir < M; ir += mr) {
                const int mv = M - ir < mr ? M - ir : mr;
                const real *a, *an;
                ptrdiff_t sa;
                int edge_direct = 0;  // mv < mr rows run by an edge kernel on A in place
                gemm_kern_fn kern;
                // The next panel to prefetch: next rows, or the first rows of the next K block.
                if (ir + mr < M) an = A_PANEL(ir + mr, pc);
                else an = A_PANEL(0, pc2 < K ? pc2 : pc);
                if (pack_ta) {
                    const int blk = mr * A_PACK_PANELS, i0 = ir - ir % blk;
                    if (ir == i0) pack_a_block(A_PANEL(i0, pc), lda, kcur, M - i0 < blk ? M - i0 : blk, mr, ap);
                    a = ap + (size_t)((ir - i0) / mr) * kcur * mr, sa = mr, kern = kd->col;
                    an = a;
                } else if (mv == mr) {
                    a = A_PANEL(ir, pc), sa = lda, kern = tA ? kd->col : kd->row;
                } else if (edge && edge[mv]) {
                    a = A_PANEL(ir, pc), sa = lda, kern = edge[mv];
                    edge_direct = 1;
                } else {
                    pack_a(tA, A_PANEL(ir, pc), lda, kcur, mv, mr, ap);
                    a = ap, sa = mr, kern = kd->col;
                    an = ap;
                }
                for (int jr = 0; jr < ncur; jr += nr) {
                    const int nv = ncur - jr < nr ? ncur - jr : nr;
                    const int last = jr + nr >= ncur;
                    const real *b = jr < ndirect ? bblk + jr : bp + (size_t)(jr - ndirect) * kcur;
                    const ptrdiff_t sb = jr < ndirect ? ldb : nr;
                    real *c = C + ir * ldc + jc + jr;
                    if (prefetch && load) {
                        // Next C tile (when it is read): same rows, next panel; or the next
                        // rows' first panel.
                        const int rows = !last ? mv : (M - ir - mr < mr ? M - ir - mr : mr);
                        const real *cn = !last ? c + nr : rows > 0 ? C + (ir + mr) * ldc + jc : C;
                        const int cols = !last ? (ncur - jr - nr < nr ? ncur - jr - nr : nr)
                                               : (ncur < nr ? ncur : nr);
                        for (int r = 0; r < rows; r++)
                            for (int j = 0; j < cols; j += 64 / (int)sizeof(real))
                                PREFETCH(cn + r * ldc + j, 1, 3);
                    }
                    if (prefetch) {
                        for (long q = 0; q < per_call && line < nlines; q++, line++) {
                            PREFETCH(bnext + pf_row * ldb + pf_col, 0, 2);
                            pf_col += 64 / (int)sizeof(real);
                            if (pf_col >= rowlen) pf_col = 0, pf_row++;
                        }
                    }
                    // The next panel of A is prefetched during the last call on this one.
                    const real *pf = last ? an : a;
                    if ((mv == mr || edge_direct) && nv == nr) {
                        kern(kcur, a, sa, pf, b, sb, c, ldc, load);
                    } else {
                        if (load)
                            for (int r = 0; r < mv; r++)
                                for (int j = 0; j < nv; j++) ct[r * nr + j] = c[r * ldc + j];
                        kern(kcur, a, sa, pf, b, sb, ct, nr, load);
                        for (int r = 0; r < mv; r++)
                            for (int j = 0; j < nv; j++) c[r * ldc + j] = ct[r * nr + j];
                    }
                }
            }
        }
    }
#undef A_PANEL
}

// Offsets the operands to the C block [i0, i0+m) x [j0, j0+n) and runs the serial driver.
static void gemm_sub(const GemmKernel *kd, int tA, int tB, int i0, int m, int j0, int n, int K,
                     const real *A, ptrdiff_t lda, const real *B, ptrdiff_t ldb, int beta1, real *C,
                     ptrdiff_t ldc) {
    gemm_block(kd, tA, tB, m, n, K, tA ? A + i0 : A + i0 * lda, lda, tB ? B + j0 * ldb : B + j0,
               ldb, beta1, C + i0 * ldc + j0, ldc);
}

void gemm_serial(int transA, int transB, int M, int N, int K, const real *A, int lda, const real *B,
                 int ldb, real beta, real *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    gemm_block(gemm_kernel_for(M, N), transA, transB, M, N, K, A, lda, B, ldb, beta != 0, C, ldc);
}

// Threads split C into a pm x pn grid of blocks of whole MR x NR tiles (never K); each block
// runs the serial driver with its own packing.
void gemm(int transA, int transB, int M, int N, int K, const real *A, int lda, const real *B, int ldb,
          real beta, real *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    const GemmKernel *kd = gemm_kernel_for(M, N);
    const int beta1 = beta != 0;
    const int mt = (M + kd->mr - 1) / kd->mr, ntl = (N + kd->nr - 1) / kd->nr;
    int nthr = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (2.0 * M * N * (double)(K > 0 ? K : 1) < 1e6) nthr = 1;  // not worth waking threads
    if ((double)nthr > (double)mt * ntl) nthr = mt * ntl;
    if (nthr <= 1) {
        gemm_block(kd, transA, transB, M, N, K, A, lda, B, ldb, beta1, C, ldc);
        return;
    }
    // Per-thread cost of a pm x pn grid, in scalar FMAs: the largest block's padded compute, plus
    // its share of packing B (transposing costs more than copying) and of reading A.
    const double wb = transB ? 8.0 : 2.0, wa = 2.0, kk = K > 0 ? K : 1;
    int pm = 1, pn = 1;
    double best = -1;
    for (int p = 1; p <= nthr && p <= mt; p++)
        for (int q = 1; p * q <= nthr && q <= ntl; q++) {
            if ((gemm_tuning.split == 1 && q != 1) || (gemm_tuning.split == 2 && p != 1)) continue;
            const double rows = (double)((mt + p - 1) / p) * kd->mr;
            const double cols = (double)((ntl + q - 1) / q) * kd->nr;
            const double cost = rows * cols * kk + cols * kk * wb + rows * kk * wa;
            if (best < 0 || cost < best * 0.999) best = cost, pm = p, pn = q;
        }
    const int nwork = pm * pn;
#pragma omp parallel num_threads(nwork)
    {
        const int nth = omp_get_num_threads();
        for (int w = omp_get_thread_num(); w < nwork; w += nth) {
            const int wi = w / pn, wj = w % pn;
            const int t0 = (int)((long)mt * wi / pm), t1 = (int)((long)mt * (wi + 1) / pm);
            const int u0 = (int)((long)ntl * wj / pn), u1 = (int)((long)ntl * (wj + 1) / pn);
            int i0 = t0 * kd->mr, i1 = t1 * kd->mr, j0 = u0 * kd->nr, j1 = u1 * kd->nr;
            if (i1 > M) i1 = M;
            if (j1 > N) j1 = N;
            if (i1 > i0 && j1 > j0)
                gemm_sub(kd, transA, transB, i0, i1 - i0, j0, j1 - j0, K, A, lda, B, ldb, beta1, C, ldc);
        }
    }
}
