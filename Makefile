# Two commands: `make run` (the embedded study end to end) and `make test` (`make check`:
# its fast tier, minutes); `make replicate`
# runs the larger laptop replication of the paper's question.
# Both create .venv at the repo root when absent and install the project with
# its pinned dependencies; torch is installed first with an exact pin so that
# a CPU machine takes the CPU wheel instead of a multi-GB CUDA build.
# `make report` rebuilds results/report.html of a finished study (the same
# SNAKEMAKE_ARGS as its `make run`); `make clean-results` lists what it would
# delete and asks first (YES=1: no question, for scripts). `make shipped-model` rebuilds
# the shipped embedded base model that `make run` copies instead of pretraining.

VENV    ?= .venv
PYTHON  ?= python3
CORES   ?= $(shell nproc 2>/dev/null || echo 2)
TORCH   ?= torch==2.13.0
SNAKEMAKE_ARGS ?=
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.isocompute-installed

.PHONY: run test check setup report replicate clean-results shipped-model check-shipped-model twin docs

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
	$(REPORT)

REPORT = snakemake --cores 1 --report results/report.html $(SNAKEMAKE_ARGS)

# The laptop replication (config/replicate.yaml, experiment `replicate`): the design the
# power analysis picked (benchmarks/power_nstar.py), end to end on the CPU, resumable
# (re-run the same command after an interruption), report in results/replicate_report.html.
replicate: export PATH := $(abspath $(VENV))/bin:$(PATH)
replicate: $(STAMP)
	snakemake --cores $(CORES) --rerun-incomplete $(SNAKEMAKE_ARGS) --configfile config/replicate.yaml
	snakemake --cores 1 --report results/replicate_report.html $(SNAKEMAKE_ARGS) --configfile config/replicate.yaml

# The shipped embedded base model (src/isocompute/model/shipped/embedded): `make run` copies
# it, checksums verified, instead of pretraining (base_model.shipped in config/schema.yaml).
# shipped-model pretrains config/config.yaml's recipe (~6 min on 2 cores) and rewrites it,
# its recipe and SHA256SUMS (after a change to the pretraining code or to the recipe);
# check-shipped-model pretrains it again and compares the weights, rewriting nothing.
shipped-model: export PATH := $(abspath $(VENV))/bin:$(PATH)
shipped-model: $(STAMP)
	isocompute ship-base-model config/config.yaml

check-shipped-model: export PATH := $(abspath $(VENV))/bin:$(PATH)
check-shipped-model: $(STAMP)
	isocompute ship-base-model config/config.yaml --check

report: export PATH := $(abspath $(VENV))/bin:$(PATH)
report: $(STAMP)
	$(REPORT)

# The CPU twin of the cluster environment (envs/cpu-twin.sh: envs/verl.yaml's stack with vLLM's
# CPU build, CPython 3.12), cached outside the clone in ~/.cache/isocompute/twin-<key of its
# lock>: built once per machine and lock (minutes), then found. `make test` needs it: the tests
# that run vLLM and verl for real fail without it there (ISOCOMPUTE_TWIN_REQUIRED=1) instead of
# skipping, as a plain pytest without a twin does.
twin: $(STAMP)
	UV=$(abspath $(VENV))/bin/uv bash envs/cpu-twin.sh

# `make test`: the strict docs build (`make docs`), then the whole suite (what CI runs).
# `make check`: its fast tier, the tests not marked slow (no real pipeline stage, training,
# verl, vLLM, SLURM or benchmark run).
# Both on TEST_WORKERS pytest-xdist workers (0: one process): the engine runs (verl, vLLM,
# SLURM) one after another on one of them, every other module whole on either
# (tests/conftest.py, work_unit: the tests marked engine).
TEST_WORKERS ?= 2
XDIST = $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder)

# The docs site (mkdocs.yml) into site/ (git-ignored). --strict: a link to a missing page or
# anchor, or a page under docs/ that the nav leaves out, fails the build; `make test` runs it
# first. NO_MKDOCS_2_WARNING silences the material theme's notice about its successor.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir site

test: $(STAMP) twin docs
	ISOCOMPUTE_TWIN_PYTHON="$$(bash envs/cpu-twin.sh --path)/bin/python" ISOCOMPUTE_TWIN_REQUIRED=1 \
	  $(VENV)/bin/python -m pytest $(XDIST) $(PYTEST_ARGS)

check: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not slow" $(XDIST) $(PYTEST_ARGS)

# Every experiment's results and Snakemake's own state (.snakemake: metadata,
# locks, logs). The software environments that `--sdm conda` (or apptainer)
# built under .snakemake take long to rebuild, so they are kept unless ENVS=1.
ENV_DIRS := conda singularity
clean-results:
	@paths=""; kept=""; \
	if [ -e results ]; then paths="results"; fi; \
	if [ -d .snakemake ]; then \
	  for d in $(ENV_DIRS); do [ -d .snakemake/$$d ] && kept="$$kept .snakemake/$$d"; done; \
	  if [ -z "$$kept" ] || [ "$(ENVS)" = 1 ]; then paths="$$paths .snakemake"; kept=""; \
	  else paths="$$paths $$(find .snakemake -mindepth 1 -maxdepth 1 $(foreach d,$(ENV_DIRS),! -name $(d)) | sort | tr '\n' ' ')"; fi; \
	fi; \
	if [ -z "$$(echo $$paths)" ]; then echo "clean-results: no results/ or .snakemake/ here, nothing to delete"; exit 0; fi; \
	echo "clean-results deletes:"; \
	for p in $$paths; do printf "  %s/ (%s)" $$p $$(du -sh $$p | cut -f1); \
	  if [ $$p = results ] && [ -d results ]; then printf ": %s" "$$(ls results | tr '\n' ' ')"; fi; echo; done; \
	for k in $$kept; do echo "and keeps $$k ($$(du -sh $$k | cut -f1)): the environments --sdm built (ENVS=1 deletes them too)"; done; \
	if [ "$(YES)" != 1 ]; then \
	  if [ -t 0 ]; then \
	    printf "Delete these? [y/N] "; read answer; \
	    case "$$answer" in y|Y|yes) ;; *) echo "clean-results: nothing deleted"; exit 0;; esac; \
	  else echo "clean-results: no terminal to ask, nothing deleted (YES=1 make clean-results deletes without asking)"; exit 1; fi; \
	fi; \
	rm -rf $$paths; echo "clean-results: deleted"
