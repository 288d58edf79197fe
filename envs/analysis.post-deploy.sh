#!/usr/bin/env bash
# Snakemake runs this once, inside a new environment (each envs/*.yaml has a
# <name>.post-deploy.sh beside it; the others link here), after creating it:
# install the isocompute package from this checkout (editable, without
# dependencies, which the environment file pins). Snakemake runs it from the
# directory it was started in -- the repository root, as docs/cluster.md says;
# set ISOCOMPUTE_SRC to the checkout otherwise.
set -euo pipefail
src="${ISOCOMPUTE_SRC:-$(pwd)}"
if ! grep -qs '^name = "isocompute"' "$src/pyproject.toml"; then
    echo "isocompute: $src is not the isocompute checkout; run snakemake from the repository root" \
         "or set ISOCOMPUTE_SRC=/path/to/isocompute" >&2
    exit 1
fi
python -m pip install --no-deps -e "$src"
