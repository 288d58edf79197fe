# Two commands: `make run` (the embedded study end to end) and `make test`.
# Both create .venv at the repo root when absent and install the project with
# its pinned dependencies; torch is installed first with an exact pin so that
# a CPU machine takes the CPU wheel instead of a multi-GB CUDA build.

VENV    ?= .venv
PYTHON  ?= python3
CORES   ?= $(shell nproc 2>/dev/null || echo 2)
TORCH   ?= torch==2.13.0
SNAKEMAKE_ARGS ?=
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.isocompute-installed

.PHONY: run test setup report clean-results

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -c constraints.txt -e ".[test]"
	@touch $(STAMP)

# Rules call the `isocompute` console script: the venv's bin goes first on PATH,
# so `make run` works without activating the venv.
run: export PATH := $(abspath $(VENV))/bin:$(PATH)
run: $(STAMP)
	snakemake --cores $(CORES) $(SNAKEMAKE_ARGS)
	snakemake --cores 1 --report results/report.html $(SNAKEMAKE_ARGS)

test: $(STAMP)
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

clean-results:
	rm -rf results .snakemake
