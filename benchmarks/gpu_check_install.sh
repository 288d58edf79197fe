#!/usr/bin/env bash
# The environment of GPU check part 2 (benchmarks/gpu_check.py) on a GPU node with PyPI:
# a venv from PyPI only -- no conda channel, no URL. The pins are envs/verl.yaml's pip list
# (read from it, so they stay in step) without its one URL, the prebuilt flash-attn wheel:
# part 2 runs verl with SDPA attention (+actor_rollout_ref.model.override_config.
# attn_implementation=sdpa), which needs no flash-attn. Plus Snakemake (part 2 drives the
# rules) and the isocompute package itself (editable, no dependencies: all listed here).
#
#   benchmarks/gpu_check_install.sh && .venv-gpu/bin/python benchmarks/gpu_check.py
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-gpu}
PYTHON=${PYTHON:-python3.12}
PINS=$(sed -n '/^  - pip:/,$p' envs/verl.yaml | sed -n 's/^ *- \([^#]*\).*/\1/p' | sed 's/ *$//' \
       | grep -v -E '^(pip:|https?://)' | grep -v '://')
SNAKEMAKE=$(grep -o '"snakemake==[^"]*"' pyproject.toml | tr -d '"')
echo "installing from PyPI into $VENV:" $PINS "$SNAKEMAKE"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install $PINS "$SNAKEMAKE"
"$VENV/bin/python" -m pip install --no-deps -e .
"$VENV/bin/isocompute" doctor || true   # the checklist; part 2 gates on what it needs of it
