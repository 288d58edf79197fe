"""The (B_p, n) sweep of docs/methods.md section 4: which training runs the config asks for.

A pure function of the config, called by rules/common.smk to enumerate the
training jobs and by anyone who wants the same list outside Snakemake.
"""

from __future__ import annotations

from dataclasses import dataclass

from isocompute.errors import ConfigError
from isocompute.layout import replicate_suffix, run_name


@dataclass(frozen=True, order=True)
class Cell:
    """One training run: B_p problems x n rollouts per step for M_max steps on one split."""
    split: str
    B_p: int
    n: int
    M_max: int
    C_max: int
    replicate: int = 0    # seed replicate: trains with seed + replicate
    variant: str = ""     # a recipe variant's run (config `variants`), "" for the study's grid

    @property
    def replicate_suffix(self) -> str:
        """'' for the first replicate, '_s<r>' for the others (run directory names)."""
        return replicate_suffix(self.replicate)

    @property
    def rollouts_per_step(self) -> int:
        return self.B_p * self.n

    @property
    def name(self) -> str:
        return run_name(self.B_p, self.n, self.replicate_suffix)


def replicates(spec: dict) -> range:
    """A split's seed replicates: `seeds` of them from `first_replicate` (default 0), each training
    with seed + replicate."""
    first = int(spec.get("first_replicate", 0))
    return range(first, first + int(spec.get("seeds", 1)))


def grid_cells(config: dict) -> list[Cell]:
    """Every cell of every split's grid with B_p * n <= B_max, and its listed `cells`,
    M_max = C_max // (B_p * n).

    Sorted by split (in splits.names order), then B_p, then n. A grid entry for
    a split the config does not build is a config error; cells that cannot
    take a single step within C_max are left out.
    """
    splits = list(config["splits"]["names"])
    cells = []
    for split, spec in config.get("grid", {}).items():
        if split not in splits:
            raise ConfigError(f"config key 'grid.{split}': split {split!r} is not built "
                              f"(splits.names is {splits})")
        kept = [Cell(split, B_p, n, spec["C_max"] // (B_p * n), spec["C_max"], r)
                for B_p in sorted(set(spec["B_p"])) for n in sorted(set(spec["n"]))
                if B_p * n <= min(spec["B_max"], spec["C_max"]) for r in replicates(spec)]
        # grid.<split>.cells is optional with no default: absent is none (a job's JobConfig has
        # no .get default, so ask whether the rule passed it).
        for i, (B_p, n) in enumerate(spec["cells"] if "cells" in spec else []):
            if B_p * n > spec["C_max"]:
                raise ConfigError(f"config key 'grid.{split}.cells[{i}]': B_p * n = {B_p * n} exceeds C_max = "
                                  f"{spec['C_max']}, so the run could not take a step")
            kept += [Cell(split, B_p, n, spec["C_max"] // (B_p * n), spec["C_max"], r)
                     for r in replicates(spec)]
        kept = sorted(set(kept))
        if not kept:
            smallest = min(spec["B_p"]) * min(spec["n"])
            reason = (f"the smallest batch B_p * n = {smallest} exceeds B_max = {spec['B_max']}"
                      if smallest > spec["B_max"] else
                      f"C_max = {spec['C_max']} is below the smallest batch B_p * n = {smallest}, so no run "
                      "could take a step")
            raise ConfigError(f"config key 'grid.{split}': no cell is left to train ({reason})")
        cells += kept
    return sorted(cells, key=lambda c: (splits.index(c.split), c.B_p, c.n, c.replicate))


def variant_cells(config: dict) -> list[Cell]:
    """The runs of every recipe variant (config `variants`, checked): one per listed cell,
    M_max = C_max // (B_p * n) with the cell's C_max or else grid.{split}.C_max. Sorted by
    variant name, then split (splits.names order), B_p, n."""
    splits = list(config["splits"]["names"])
    cells = []
    for name, variant in sorted(config.get("variants", {}).items()):
        for i, spec in enumerate(variant["cells"]):
            C_max = spec.get("C_max") or config["grid"][spec["split"]]["C_max"]
            if spec["B_p"] * spec["n"] > C_max:
                raise ConfigError(f"config key 'variants.{name}.cells[{i}]': B_p * n = {spec['B_p'] * spec['n']} "
                                  f"exceeds C_max = {C_max}, so the run could not take a step")
            cells.append(Cell(spec["split"], spec["B_p"], spec["n"], C_max // (spec["B_p"] * spec["n"]), C_max,
                              variant=name))
    return sorted(cells, key=lambda c: (c.variant, splits.index(c.split), c.B_p, c.n))


def find_cell(cells: list[Cell], split: str, B_p: int, n: int, replicate: int = 0, variant: str = "") -> Cell:
    for cell in cells:
        if (cell.split, cell.B_p, cell.n, cell.replicate, cell.variant) == \
                (split, int(B_p), int(n), int(replicate), variant):
            return cell
    suffix = replicate_suffix(int(replicate))
    if variant:
        raise ConfigError(f"no cell {split}/{run_name(B_p, n)} in variant {variant!r} of the config")
    raise ConfigError(f"no grid cell {split}/{run_name(B_p, n, suffix)} in the config's grid")


def replicate_of(suffix: str) -> int:
    """The replicate index of a run directory suffix ('' -> 0, '_s2' -> 2)."""
    return int(suffix[2:]) if suffix else 0



def max_bp_per_split(cells: list[Cell]) -> dict[str, int]:
    """The largest B_p each split's grid asks for."""
    out: dict[str, int] = {}
    for cell in cells:
        out[cell.split] = max(out.get(cell.split, 0), cell.B_p)
    return out


def check_split_sizes(max_bp: dict[str, int], train_sizes: dict[str, int], key: str = "grid.{split}.B_p") -> None:
    """Every split has at least as many training problems as its grid's largest B_p
    (a step draws B_p distinct problems). `key` names the config key of the B_p values."""
    for split, B_p in sorted(max_bp.items()):
        if split in train_sizes and train_sizes[split] < B_p:
            raise ConfigError(f"config key '{key.format(split=split)}': B_p = {B_p} exceeds the "
                              f"{train_sizes[split]} training problems of split '{split}'; lower it or enlarge "
                              "the split")

