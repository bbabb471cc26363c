# Build every program with `make`, run the tests with `make test`.
# Library sources are compiled twice: build/f32 (the programs) and build/f64 (REAL_DOUBLE, the
# test runner, so finite-difference checks can use tight tolerances).
CC      ?= cc
ARCH    ?= -march=native
OPT     ?= -O3
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# clang reports each `#pragma omp simd` loop it cannot vectorize (calls to exp without a vector libm)
CLANG_WARN = -Wno-pass-failed
WARN    += $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),$(CLANG_WARN))
CFLAGS  ?=
ALL_CFLAGS = -std=c11 $(OPT) $(ARCH) -ffp-contract=fast -fopenmp $(WARN) -D_GNU_SOURCE -I. $(CFLAGS)
LDLIBS   = -lz -lm
LDFLAGS ?=

LIB_SRC  = $(filter-out %_main.c,$(wildcard core/*.c model/*.c model/mixers/*.c model/kernels/*.c data/*.c eval/*.c tokenizer/*.c trainer/*.c ablation/*.c))
F32_OBJ  = $(LIB_SRC:%.c=build/f32/%.o)
F64_OBJ  = $(LIB_SRC:%.c=build/f64/%.o)
TEST_OBJ = $(patsubst %.c,build/f64/%.o,$(wildcard tests/*.c))
PROGRAMS = train evaluate tokenize sample sweep

.PHONY: all test clean asan bench
all: $(PROGRAMS) build/run_tests

train: build/f32/train.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

evaluate: build/f32/eval/evaluate_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

tokenize: build/f32/tokenizer/tokenize_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

sample: build/f32/model/sample_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

sweep: build/f32/ablation/sweep_main.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

build/run_tests: $(TEST_OBJ) $(F64_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

build/f32/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

build/f64/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DREAL_DOUBLE -MMD -MP -c $< -o $@

# The test runner runs every case in its own process; arguments filter by substring.
test: all
	./build/run_tests $(T)

# `make bench`: the gemm kernels, then every bench/*.conf model for every registered mixer
# (bench/bench.c; results appended to bench/results.jsonl). BENCH_ARGS passes options, e.g.
# BENCH_ARGS="--quick --only softmax". The PyTorch column needs /usr/bin/python3 with torch.
BENCH_CONF ?= $(sort $(wildcard bench/*.conf))
BENCH_ARGS ?=
build/bench: build/f32/bench/bench.o build/f32/bench/peak.o $(F32_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

build/bench_gemm: build/f32/bench/bench_gemm.o build/f32/bench/peak.o build/f32/model/kernels/gemm.o build/f32/model/kernels/gemm_x86.o
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

bench: build/bench build/bench_gemm
	./build/bench_gemm --quick --no-check
	./build/bench $(BENCH_ARGS) $(BENCH_CONF)

# asan, valgrind, fuzz, faults, clang-check, arm64-test: README "Reliability"
include tests/reliability.mk
include tests/report.mk

clean:
	rm -rf build $(PROGRAMS)

-include $(shell find build -name '*.d' 2>/dev/null)
