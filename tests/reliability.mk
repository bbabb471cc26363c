# Reliability targets (docs/reliability.md#reliability-targets), included by the Makefile. Each
# variant builds the programs and the test runner into its own folder, so none clashes with
# build/f32 and build/f64:
#   make asan          the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make valgrind      a short training of every mixer under valgrind memcheck (tests/valgrind.sh)
#   make fuzz          each libFuzzer target for FUZZ_SECONDS, or FUZZ_RUNS executions (tests/fuzz/)
#   make faults        kill -9 during training and checkpointing, disk full, two trainers on one
#                      folder, kill -9 before the done record, kill -9 while a sweep writes its
#                      summary, two sweeps on one folder, concurrent evaluations and collects
#                      (tests/faults/)
#   make clang-check   every file with clang and -Werror
#   make arm64-test    cross-compiled for arm64: the float GEMM check and `make test` under qemu-user
# Run a variant's tests from its folder: the tests call ./train etc. and read README.md, docs/, configs/
# and tests/ (linked into the folder).
# Debian 12 packages: valgrind; clang libomp-dev libclang-rt-14-dev (clang-check, fuzz);
# gcc-aarch64-linux-gnu libc6-arm64-cross qemu-user, and zlib for arm64:
# dpkg --add-architecture arm64 && apt-get update && apt-get install zlib1g-dev:arm64.

# A variant V has V_DIR, V_CC, V_FLAGS and V_RUNNER (e.g. qemu for arm64). $(call variant,V) makes
# its objects, V_DIR/PROGRAM for every program and V_DIR/run_tests; with a RUNNER the binaries
# go to V_DIR/bin/ and V_DIR/PROGRAM is a script that runs them through it (qemu-user: -0 gives
# the program the script's name as argv[0], so ./sweep finds ./train beside it).
main_obj = $(patsubst %.c,%.o,$(firstword $(wildcard $(1).c */$(1)_main.c)))
# A variant's tests run in its folder, which links what they read from the repository: the docs,
# configs and test data, the results the README links to, and the sources (every program's keys
# must be named in the docs), and build/commit.h, the generated header a source includes.
VARIANT_LINKS = README.md LICENSE docs configs tests results train.c \
                $(sort $(foreach f,$(LIB_SRC) $(wildcard bench/*.c),$(firstword $(subst /, ,$(f)))))
define variant
$($(1)_DIR)/f32/%.o: %.c
	@mkdir -p $$(@D)
	$($(1)_CC) $($(1)_FLAGS) -MMD -MP -c $$< -o $$@
$($(1)_DIR)/f64/%.o: %.c
	@mkdir -p $$(@D)
	$($(1)_CC) $($(1)_FLAGS) -DREAL_DOUBLE -MMD -MP -c $$< -o $$@
$(foreach p,$(PROGRAMS),$(eval $(call variant_program,$(1),$(p),$(call main_obj,$(p)),f32)))
$(eval $(call variant_program,$(1),run_tests,$(patsubst %.c,%.o,$(TEST_SRC)),f64))
$($(1)_DIR)/ready: $(addprefix $($(1)_DIR)/$(if $($(1)_RUNNER),bin/),$(PROGRAMS) run_tests)
	ln -sfn $(addprefix ../../,$(VARIANT_LINKS)) $($(1)_DIR)/
	mkdir -p $($(1)_DIR)/build && ln -sfn ../../commit.h $($(1)_DIR)/build/commit.h
	$(if $($(1)_RUNNER),for p in $(PROGRAMS) run_tests; do printf '#!/bin/sh\nexec $($(1)_RUNNER) -0 "$$$$0" "$$$$(dirname "$$$$0")/bin/%s" "$$$$@"\n' $$$$p > $($(1)_DIR)/$$$$p; chmod +x $($(1)_DIR)/$$$$p; done)
	touch $$@
endef
# $(call variant_program,V,NAME,MAIN_OBJECTS,f32|f64)
define variant_program
$($(1)_DIR)/$(if $($(1)_RUNNER),bin/)$(2): $(addprefix $($(1)_DIR)/$(4)/,$(3)) $(LIB_SRC:%.c=$($(1)_DIR)/$(4)/%.o)
	@mkdir -p $$(@D)
	$($(1)_CC) $($(1)_FLAGS) $$^ -o $$@ $(LDLIBS)
endef

# --- ARCH=NAME and NO_OMP=1 (Makefile): the default build's flags, in build/NAME[-noomp] -------------
ifneq ($(ALT_DIR),)
ALT_CC    = $(CC)
ALT_FLAGS = $(ALL_CFLAGS)
$(eval $(call variant,ALT))
$(eval $(call variant_program,ALT,bench,bench/bench.o bench/peak.o,f32))
$(eval $(call variant_program,ALT,bench_gemm,bench/bench_gemm.o bench/peak.o,f32))
endif

# --- AddressSanitizer + UndefinedBehaviorSanitizer -------------------------------------------------
ASAN_DIR     = build/asan$(if $(ASAN_SKIP),,-full)
ASAN_CC     ?= $(CC)
# UBSan's pointer-overflow check makes the numeric tests 10-30x slower (the suite 6 min instead of
# 1.5); `make asan ASAN_SKIP=` includes it (built in build/asan-full).
ASAN_SKIP   ?= pointer-overflow
ASAN_FLAGS   = -std=c11 -O2 -g -fno-omit-frame-pointer $(ARCH_FLAGS) -ffp-contract=fast -fopenmp $(WARN) \
               -D_GNU_SOURCE -I. -fsanitize=address,undefined $(if $(ASAN_SKIP),-fno-sanitize=$(ASAN_SKIP)) \
               -fno-sanitize-recover=all $(CFLAGS)
ASAN_ENV     = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1 \
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
$(eval $(call variant,ASAN))

asan: $(ASAN_DIR)/ready
	cd $(ASAN_DIR) && $(ASAN_ENV) ./run_tests $(T)

# --- valgrind: an optimised build without -march=native (valgrind has no AVX-512) ------------------
VG_DIR   = build/valgrind
VG_CC    = $(CC)
VG_FLAGS = -std=c11 -O2 -g -ffp-contract=fast -fopenmp $(WARN) -D_GNU_SOURCE -I. $(CFLAGS)
$(eval $(call variant,VG))

valgrind: $(VG_DIR)/train
	tests/valgrind.sh $(VG_DIR)/train

# --- clang, warnings as errors (objects only: the link is the same as gcc's) -------------------------
CLANG_DIR   = build/clang
CLANG_CC    = clang
CLANG_FLAGS = -std=c11 $(OPT) $(ARCH_FLAGS) -ffp-contract=fast -fopenmp $(WARN) $(CLANG_WARN) -D_GNU_SOURCE -I. -Werror $(CFLAGS)
$(eval $(call variant,CLANG))

clang-check: $(CLANG_DIR)/ready

# --- arm64: cross-compiled, run under qemu-user ------------------------------------------------------
ARM64_CC     ?= aarch64-linux-gnu-gcc
ARM64_DIR     = build/arm64
# The cross toolchain's libc first: zlib1g:arm64 brings a second arm64 libc (/lib/aarch64-linux-gnu),
# and a mix of the two hangs in the child of fork() (the test runner forks for every case).
ARM64_RUNNER ?= qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib
ARM64_FLAGS   = -std=c11 $(OPT) -ffp-contract=fast -fopenmp $(WARN) -D_GNU_SOURCE -I. $(CFLAGS)
$(eval $(call variant,ARM64))

$(eval $(call variant_program,ARM64,bench_gemm,bench/bench_gemm.o bench/peak.o,f32))

arm64: $(ARM64_DIR)/ready
# the NEON kernels in float (the suite runs them in double), then the suite
arm64-test: $(ARM64_DIR)/ready $(ARM64_DIR)/bin/bench_gemm
	$(ARM64_RUNNER) $(ARM64_DIR)/bin/bench_gemm --check-only --kernel neon
	cd $(ARM64_DIR) && ./run_tests $(RUN_T)
# CI (.ci/run): under qemu-user every case runs 10-20 times slower than natively, and the whole
# suite took 35 of CI's 56 minutes. The cases that differ on arm64 are those that run its own code:
# the NEON GEMM kernels (model/kernels/gemm_neon.c, float and double; the float ones are also
# checked by bench_gemm above), the elementwise math as GCC vectorizes it for NEON
# (model/kernels/vmath.h), thread invariance of the kernels and of training, and the programs end
# to end (the float build: train, evaluate, sample, tokenize, export). ARM64_CI_CASES names
# those (substrings of case names). The rest (configs, run folders, sweeps, faults, the docs, the
# statistics of the theory, each mixer's own finite-difference checks of its other shapes) is the
# same C on every ISA and runs in the x86-64, x86-64-v3 and ASAN suites; each mixer's backward on
# arm64 is still checked by every_mixer_backward_matches_finite_differences. `make arm64-test`
# runs the whole suite (docs/laptops.md, docs/tests.md).
ARM64_CI_CASES = gemm_ float_exp float_log float_softplus float_sigmoid bit_identical_for_one_and_two_threads \
    mamba2_sequence_and_head_tasks_bit_identical same_bits \
    thread_invariant identical_for_any_thread_count every_mixer_backward_matches_finite_differences \
    text_pipeline_tokenize_prepare_train_sample evaluate_float_row_statistics export_hf_folder_reads_back \
    gla_float_training_step
arm64-ci:
	$(MAKE) arm64-test T="$(ARM64_CI_CASES)"

# --- libFuzzer targets (clang) ---------------------------------------------------------------------
FUZZ_SECONDS ?= 60
# FUZZ_RUNS=N bounds each target by executions (libFuzzer -runs=N) instead of FUZZ_SECONDS
FUZZ_RUNS    ?=
FUZZ_TARGETS  = $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_FLAGS    = -std=c11 -O1 -g -fno-omit-frame-pointer -fopenmp $(WARN) $(CLANG_WARN) -D_GNU_SOURCE -I. \
                -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -DATTNSCOPE_FUZZ $(CFLAGS)
build/fuzz/f32/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -MMD -MP -c $< -o $@
# exit() of the library's die() returns to the fuzz target (tests/fuzz/fuzz.h)
build/fuzz/fuzz_%: build/fuzz/f32/tests/fuzz/fuzz_%.o build/fuzz/f32/tests/fuzz/harness.o $(LIB_SRC:%.c=build/fuzz/f32/%.o)
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer -Wl,--wrap=exit,--wrap=mmap,--wrap=munmap $^ -o $@ $(LDLIBS)

fuzz-build: $(addprefix build/fuzz/,$(FUZZ_TARGETS))
fuzz: fuzz-build
	FUZZ_RUNS=$(FUZZ_RUNS) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# --- faults ----------------------------------------------------------------------------------------
faults: train sweep evaluate
	tests/faults/kill9.sh
	tests/faults/disk_full.sh
	tests/faults/shared_folder.sh
	tests/faults/kill_before_done.sh
	tests/faults/summary_kill9.sh
	tests/faults/two_sweeps.sh
	tests/faults/concurrent_writers.sh

.PHONY: asan valgrind clang-check arm64 arm64-test arm64-ci fuzz fuzz-build faults
