#!/usr/bin/env bash
# Snakemake runs this once, inside a new environment, after creating it from
# analysis.yaml (verl.post-deploy.sh does the same for verl.yaml): install the
# environment's pip lock, hashes checked, and the isocompute package from this checkout.
set -euo pipefail
bash "${ISOCOMPUTE_SRC:-$(pwd)}/envs/install-env.sh" analysis
