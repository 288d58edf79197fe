#!/usr/bin/env bash
# The GPU check, from the repository root. Part 1 (a bare offline single-GPU node, <= 15 min):
#   python benchmarks/gpu_check_local.py --out gpu_check_local.json
# Part 2 (a GPU node with PyPI; benchmarks/gpu_check_install.sh first, <= 8 minutes):
exec python "$(dirname "$0")/gpu_check.py" --out "${1:-gpu_check.json}"
