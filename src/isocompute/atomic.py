"""Atomic writes: every output of the pipeline appears whole or not at all.

A file is written beside its target under a hidden temporary name and renamed
into place; a folder is built beside its target and swapped in only once
complete. On any error the temporary is removed and the old output (if any) is
left as it was. Readers (Snakemake, a resumed run, a user) never see half a file.
Outputs get the modes a plain write would (0666 / 0777 less the umask), not the
private 0600 / 0700 of a temporary: a results folder shared by a group stays readable.
What was damaged after it was written (a torn copy, an edit) is refused on reading
(`read_parquet`, `read_json`) with one line naming the file, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from isocompute.errors import InputError


@contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path`.

    The temporary keeps the target's suffix, so writers that pick a format
    from the name (parquet, savefig) still do.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    os.chmod(tmp, 0o666 & ~current_umask())
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def current_umask() -> int:
    """The process's umask, read without changing it (Linux /proc), else set and restored."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text(path: Path | str, text: str) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return Path(path)


def write_json(path: Path | str, obj) -> Path:
    """Indented, key-sorted JSON (provenance files, summaries)."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str))


def write_jsonl(path: Path | str, records: Iterable[dict]) -> Path:
    """One JSON object per line (verl's dump and logger format)."""
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    return Path(path)


def write_parquet(path: Path | str, df) -> Path:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    return Path(path)


DAMAGED = "delete it so the rule that writes it runs again"


def read_parquet(path: Path | str, **kwargs):
    """A parquet file of the pipeline as a frame; a missing, truncated or foreign file raises
    InputError naming it (pyarrow says ArrowInvalid or OSError)."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: not found")
    try:
        return pd.read_parquet(path, **kwargs)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError, ArrowIOError an OSError
        raise InputError(f"{path}: not a readable parquet file ({error_line(exc)}); {DAMAGED}") from None


def read_json(path: Path | str):
    """A JSON file of the pipeline (a run's run.json, a summary); a missing or garbled file raises
    InputError naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: not found")
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({error_line(exc)}); {DAMAGED}") from None


def error_line(exc: BaseException) -> str:
    """An exception as one line for a message: its type and the first line of its text."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


# Every folder atomic_dir makes carries this file, so that it replaces only folders it made.
OUTPUT_MARK = ".isocompute-output"


def check_replaceable(path: Path | str) -> None:
    """`path` may be replaced by a new output folder: absent, an empty folder, or one this
    tool made. Anything else (a study, the working folder, an input file) is never deleted."""
    path = Path(path).resolve()
    if not path.exists():
        return
    if not path.is_dir():
        raise InputError(f"{path}: exists and is not a folder; refusing to replace it with an output folder")
    if (path / OUTPUT_MARK).is_file() or not any(path.iterdir()):
        return
    raise InputError(f"{path}: an existing folder this tool did not write (no {OUTPUT_MARK} in it); refusing "
                     "to replace it: give another output folder, or remove this one yourself")


@contextmanager
def atomic_dir(path: Path | str) -> Iterator[Path]:
    """Yield an empty temporary folder beside `path`; on success it takes `path`'s place.

    An existing `path` is replaced only if this tool made it (check_replaceable, before
    any work), is moved aside only once the new folder is complete, and is put back if
    the swap fails.
    """
    path = Path(path).resolve()
    check_replaceable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    os.chmod(tmp, 0o777 & ~current_umask())
    try:
        yield tmp
        (tmp / OUTPUT_MARK).write_text("written by isocompute (atomic.atomic_dir)\n")
        _swap_in(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(src: Path, dst: Path) -> None:
    if not dst.exists():
        os.replace(src, dst)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{dst.name}.old-", dir=dst.parent))
    os.rmdir(old)
    os.replace(dst, old)
    try:
        os.replace(src, dst)
    except BaseException:
        os.replace(old, dst)
        raise
    shutil.rmtree(old, ignore_errors=True)


def sha256_file(path: Path | str) -> str:
    """The sha256 hex digest of a file's bytes (what `sha256sum` prints), read in blocks."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
