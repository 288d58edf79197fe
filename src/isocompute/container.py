"""The container the jobs may run in (`cluster.container`, Snakemake's `container:`
directive under --sdm apptainer): which references are images Snakemake and
Apptainer can use, checked by name at config time and by `isocompute doctor`.

A deployment setting, like the conda environments: no job's params read it.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from isocompute.errors import ConfigError

KEY = "cluster.container"
# What `apptainer pull` fetches (Snakemake pulls every non-local image with it).
REMOTE_SCHEMES = ("docker", "oras", "library", "shub", "http", "https")
# Building the image from the pinned stack, from the repository root (docs/cluster.md).
BUILD_COMMAND = "apptainer build verl.sif envs/verl.def"


def local_image(reference: str) -> Path | None:
    """The file (or sandbox directory) of a local image; None for a registry reference."""
    parts = urlsplit(reference)
    if parts.scheme == "file":
        return Path(parts.path)
    return Path(reference).expanduser() if parts.scheme == "" else None


def check_container(reference: str | None) -> None:
    """A ConfigError of one line naming the key unless `reference` is null, a local
    path, or a URI of a scheme Apptainer pulls from."""
    if reference is None:
        return
    if any(c.isspace() for c in reference):
        raise ConfigError(f"config key '{KEY}': no whitespace allowed (Snakemake refuses it), got {reference!r}")
    scheme = urlsplit(reference).scheme
    if scheme not in ("", "file", *REMOTE_SCHEMES):
        raise ConfigError(f"config key '{KEY}': expected a path to a .sif image or a URI of "
                          f"{', '.join(s + '://' for s in REMOTE_SCHEMES)}, got {reference!r} "
                          f"(scheme {scheme!r}; a registry image is written docker://name:tag)")
