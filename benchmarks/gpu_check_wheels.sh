#!/usr/bin/env bash
# Builds benchmarks/wheels/: what GPU check part 1 (benchmarks/gpu_check_local.py) needs on a
# bare, offline node beyond its torch, transformers, numpy, pandas, pyarrow, scipy, seaborn,
# tqdm, pyyaml, jinja2. Run it on a machine with PyPI, then copy the repository (wheels
# included) to the node; part 1 unpacks what that node's python lacks. The wheels are not
# committed (.gitignore). No verl, Ray, Snakemake or vLLM: part 1 imports none of them.
#
#   benchmarks/gpu_check_wheels.sh                 # for the node: CPython 3.12, x86_64 Linux
#   PYTHON_VERSION=3.11 benchmarks/gpu_check_wheels.sh   # for another interpreter
#
# Versions: the project's pins (pyproject.toml, constraints.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-benchmarks/wheels}
PYTHON_VERSION=${PYTHON_VERSION:-3.12}
PIP=${PIP:-python3 -m pip}
rm -rf "$OUT" && mkdir -p "$OUT"

# Pure-Python wheels (py3-none-any): the config's validator and the grader.
PURE="jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 attrs==26.1.0
      math-verify==0.9.0 latex2sympy2_extended==1.11.0"
# shellcheck disable=SC2086
$PIP download --no-deps --only-binary=:all: -d "$OUT" $PURE
# rpds-py (referencing's Rust core) is compiled: the node's CPython and platform.
$PIP download --no-deps --only-binary=:all: --python-version "$PYTHON_VERSION" --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$OUT" rpds-py==2026.9.1
# antlr4 4.9.3 (the runtime hydra pins, so the grader parses LaTeX as in make test) is an
# sdist on PyPI: built here into a pure-Python wheel, since the node has no network to build;
# built as the cluster's install builds it (envs/install-env.sh): the analysis lock's pins of
# it and of its build tools (setuptools), hashes checked, in a venv of their own, no isolation.
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
${PYTHON:-python3} -m venv "$build/venv"
${PYTHON:-python3} envs/lock.py --build-tools analysis >"$build/tools.txt"
${PYTHON:-python3} envs/lock.py --sdists analysis >"$build/sdists.txt"
"$build/venv/bin/python" -m pip install -q --no-cache-dir --no-deps --require-hashes -r "$build/tools.txt"
"$build/venv/bin/python" -m pip wheel --no-cache-dir --no-deps --require-hashes --no-build-isolation \
  -w "$OUT" -r "$build/sdists.txt"

ls -l "$OUT"
du -sh "$OUT"
