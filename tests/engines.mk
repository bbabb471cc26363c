# Sweeps on other engines (docs/sweeps-engines.md), included by the Makefile:
#   make parallel-test   a tiny sweep through GNU parallel, compared with a local ./sweep run
#                        (first: install.sh stops the daemons an install started, and only those)
#   make slurm-test      the same through a single-node Slurm stood up on this machine
#   make engines-test    both
# Each installs its Debian packages when missing (parallel; slurm-wlm, munge: needs root or
# sudo) and skips loudly when it cannot; ENGINES_REQUIRED=1 (CI) makes a skip a failure.
.PHONY: parallel-test slurm-test engines-test
parallel-test: all
	tests/engines/install_test.sh
	tests/engines/parallel.sh
slurm-test: all
	tests/engines/slurm.sh
engines-test: parallel-test slurm-test
