#!/usr/bin/env bash
# Installs envs/<name>.lock.txt into the active environment (the python on PATH), hashes
# checked and nothing else resolved -- first the lock's build tools (setuptools), then the rest
# with them: the pins PyPI has as sdists alone (antlr4-python3-runtime; envs/lock.py's SDIST_ONLY)
# are built without build isolation, since an isolated build fetches its backend unhashed -- then the wheels envs/<name>.in names by URL (no
# dependencies: theirs are in the lock), then the isocompute package from this checkout
# (editable, no dependencies, built by the lock's setuptools: nothing fetched unhashed).
# <name>.post-deploy.sh calls it; Snakemake runs that from the directory it was started in
# -- the repository root, as docs/cluster.md says; set ISOCOMPUTE_SRC to the checkout
# otherwise.
#
#   bash envs/install-env.sh verl|analysis|gpu-check
set -euo pipefail
name="${1:?usage: install-env.sh verl|analysis|gpu-check}"
src="${ISOCOMPUTE_SRC:-$(pwd)}"
if ! grep -qs '^name = "isocompute"' "$src/pyproject.toml"; then
    echo "isocompute: $src is not the isocompute checkout; run snakemake from the repository root" \
         "or set ISOCOMPUTE_SRC=/path/to/isocompute" >&2
    exit 1
fi
lock="$src/envs/$name.lock.txt"
[ -f "$lock" ] || { echo "isocompute: $lock: no such lock (python envs/lock.py writes it)" >&2; exit 1; }
tools="$(mktemp)"
trap 'rm -f "$tools"' EXIT
python "$src/envs/lock.py" --build-tools "$name" >"$tools"
if [ -s "$tools" ]; then
    python -m pip install --no-deps --require-hashes -r "$tools"
fi
python -m pip install --no-deps --require-hashes --no-build-isolation -r "$lock"
# each URL whole, pip's #sha256=<hex> fragment included (pip checks the download against it);
# a comment after it, past a space, is not part of it
urls=$(sed -n 's/^\(https\?:\/\/[^ ]*\).*/\1/p' "$src/envs/$name.in")
if [ -n "$urls" ]; then
    # shellcheck disable=SC2086
    python -m pip install --no-deps $urls
fi
# the package's build backend (setuptools) is the lock's, hash-checked above: no build
# isolation, no index, so this step fetches nothing
python -m pip install --no-deps --no-build-isolation --no-index -e "$src"
