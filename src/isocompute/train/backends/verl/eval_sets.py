"""Extra evaluation sets on verl (config eval.extra_sets): verl 0.9.1 validates on
`data.val_files` given as a list, one concatenated validation set, and reports
`val-core/<data_source>/acc/mean@k` per data source. Each set is copied into the run
folder with its name as data_source (and problem ids filled in), the reward function
echoes data_source into the dumps, and after the session each dump is split by it:
the own split's samples stay in generations/{step}.jsonl, a set's go to
generations/{set}/{step}.jsonl (`RunFiles.set_generations`), which scoring reads.
"""

from __future__ import annotations

from pathlib import Path

from isocompute import atomic
from isocompute.errors import InputError
from isocompute.train.run_logs import read_jsonl


def set_copy(files, name: str) -> Path:
    """Where a run keeps the copy of evaluation set `name` that verl reads."""
    return Path(files.session_dir) / "eval_sets" / f"{name}.parquet"


def val_files(paths, files) -> str | list[str]:
    """data.val_files: the own split's file alone (as before), or it and each set's copy."""
    own = str(Path(paths.val_file).resolve())
    if not paths.eval_sets:
        return own
    return [own, *(str(set_copy(files, name)) for name, _ in paths.eval_sets)]


def write_set_copies(paths, files) -> dict[str, int]:
    """Copy each set with data_source = its name; the own split's data sources must not be a
    set's name (its samples would be taken for the set's). Returns problems per set."""
    import pandas as pd

    from isocompute.data.eval_sets import read_eval_set

    if not paths.eval_sets:
        return {}
    own_sources = set(pd.read_parquet(paths.val_file, columns=["data_source"])["data_source"].astype(str))
    sizes = {}
    for name, path in paths.eval_sets:
        if name in own_sources:
            raise InputError(f"evaluation set {name!r}: the name is a data_source of {paths.val_file}; "
                             "rename the set (eval.extra_sets[].name)")
        df = read_eval_set(path, name).assign(data_source=name)
        atomic.write_parquet(set_copy(files, name), df)
        sizes[name] = len(df)
    return sizes


def split_dumps(generations: Path, names) -> int:
    """Move each dumped sample of a set (its data_source) to generations/{set}/{step}.jsonl;
    returns the dumps split. Idempotent: a dump without set samples is left as it is."""
    names = set(names)
    count = 0
    for path in sorted(Path(generations).glob("*.jsonl")):
        records = read_jsonl(path)
        if not any(r.get("data_source") in names for r in records):
            continue
        for name in names:
            mine = [r for r in records if r.get("data_source") == name]
            if mine:
                atomic.write_jsonl(Path(generations) / name / path.name, mine)
        atomic.write_jsonl(path, [r for r in records if r.get("data_source") not in names])
        count += 1
    return count
