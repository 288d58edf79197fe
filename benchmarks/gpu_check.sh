#!/usr/bin/env bash
# The GPU check in one command, from the repository root on a machine with one GPU (<= 8 minutes).
exec python "$(dirname "$0")/gpu_check.py" --out "${1:-gpu_check.json}"
