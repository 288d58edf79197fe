#!/usr/bin/env bash
# The environment of GPU check part 2 (benchmarks/gpu_check.py) on a GPU node with PyPI: a venv
# from PyPI only (no conda channel, no URL) with envs/gpu-check.lock.txt, hashes checked and
# nothing resolved beyond it. That lock is the cluster's (envs/verl.in, which envs/verl.yaml
# installs through envs/verl.lock.txt) plus Snakemake -- part 2 drives the rules -- resolved
# together in CI like the CPU twin's (envs/cpu-twin.lock.txt, the same pins with vLLM's CPU
# build), so a lent GPU checks the versions CI checked on the CPU, plus CUDA. Not verl.in's one
# URL, the prebuilt flash-attn wheel: part 2 runs verl with SDPA attention (+actor_rollout_ref.
# model.override_config.attn_implementation=sdpa), which needs no flash-attn. Then the
# isocompute package itself (editable, no dependencies: all in the lock). The install is
# envs/install-env.sh's, as a conda env's: the lock's build tools first, hashed, then the lock
# with its sdists built by them (no build isolation), so nothing is fetched unhashed.
#
#   benchmarks/gpu_check_install.sh && .venv-gpu/bin/python benchmarks/gpu_check.py
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-gpu}
PYTHON=${PYTHON:-python3.12}
LOCK=envs/gpu-check.lock.txt
echo "installing $LOCK (hashes checked) from PyPI into $VENV"
"$PYTHON" -m venv "$VENV"
venv="$(cd "$VENV" && pwd)"
PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv" ISOCOMPUTE_SRC="$PWD" bash envs/install-env.sh gpu-check
"$VENV/bin/isocompute" doctor || true   # the checklist; part 2 gates on what it needs of it
