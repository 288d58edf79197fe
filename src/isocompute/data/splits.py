"""Difficulty splits (docs/methods.md section 2): closed avg@16 bands, the Extremely
Hard set (pass@K = 0), and Dual/Tri mixtures, each with a held-out validation
set disjoint from its training problems. A mixture's component is drawn from
its split, or (the paper's definition, docs/methods.md section 10) from a band of the
rate over the same K samples. Pure functions over frames."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from isocompute.errors import ConfigError, InputError

BAND_SPLITS = ("easy", "hard", "very_easy")
MIXTURE_SPLITS = ("dual", "tri")
ALL_SPLITS = ("easy", "hard", "very_easy", "extremely_hard", "dual", "tri")


def in_band(correct: np.ndarray, samples: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """lo <= correct/samples <= hi exactly (closed; no float rounding at 0.3, 0.0625...)."""
    lo_f, hi_f = Fraction(str(lo)), Fraction(str(hi))
    correct = np.asarray(correct)
    samples = np.broadcast_to(np.asarray(samples), correct.shape)
    return np.array([lo_f * s <= c <= hi_f * s for c, s in zip(correct.tolist(), samples.tolist())], dtype=bool)


def split_members(difficulty: pd.DataFrame, bands: dict) -> dict[str, np.ndarray]:
    """Indices (into the difficulty table) of each band split and Extremely Hard."""
    out = {name: np.flatnonzero(in_band(difficulty["correct"], difficulty["samples"], *bands[name]))
           for name in BAND_SPLITS}
    out["extremely_hard"] = np.flatnonzero(difficulty["correct_k"].to_numpy() == 0)
    return out


def _train_val(members: np.ndarray, val_size: int, max_train: int | None, rng, name: str):
    if len(members) < val_size + 1:
        raise ConfigError(
            f"config key 'splits.val_size': split '{name}' has {len(members)} problems, "
            f"too few for {val_size} validation problems plus training; lower splits.val_size "
            f"or drop '{name}' from splits.names")
    perm = rng.permutation(members)
    val, train = np.sort(perm[:val_size]), perm[val_size:]
    if max_train is not None:
        train = train[:max_train]
    return np.sort(train), val


def component_share(spec) -> float:
    """A mixture component's share: a number, or the `share` of {share, band} ($defs.component)."""
    return spec["share"] if isinstance(spec, dict) else spec


def needs_k_samples(cfg: dict) -> bool:
    """Whether a built mixture has a component defined over K samples, so that the
    difficulty stage must draw K samples for every problem (not only the unsolved)."""
    sc = cfg["splits"]
    return any(isinstance(spec, dict) for mix in MIXTURE_SPLITS if mix in sc["names"]
               for spec in sc["mixtures"][mix].values())


def _k_component(difficulty: pd.DataFrame, band, held_out: np.ndarray, val_size: int, rng,
                 name: str) -> dict[str, np.ndarray]:
    """Train/val indices of the problems whose rate over the same K samples (the table's
    largest samples_k) lies in `band`, leaving out `held_out` (every split's validation problems)."""
    samples_k = difficulty["samples_k"].to_numpy()
    K = int(samples_k.max())
    if (samples_k < K).any():
        raise InputError(f"difficulty table: {int((samples_k < K).sum())} problems have fewer than K = {K} samples, "
                         f"but component {name} is defined over K samples (splits.mixtures); re-run the "
                         "difficulty stage, which draws K samples for every problem when a component needs them")
    members = np.flatnonzero(in_band(difficulty["correct_k"], samples_k, *band))
    members = np.setdiff1d(members, held_out)
    if len(members) < val_size + 1:
        raise ConfigError(f"config key 'splits.mixtures.{name}.band': {len(members)} problems have a rate over "
                          f"K = {K} samples in {list(band)} (outside every split's validation set), too few for "
                          f"{val_size} validation problems plus training; widen the band or lower splits.val_size")
    train, val = _train_val(members, val_size, None, rng, name)
    return {"train": train, "val": val}


def _proportional(total: int, weights: dict[str, float]) -> dict[str, int]:
    names = list(weights)
    counts = {k: int(np.floor(total * weights[k] + 1e-9)) for k in names}
    counts[names[0]] += total - sum(counts.values())  # remainder to the first component
    return counts


def make_splits(difficulty: pd.DataFrame, cfg: dict) -> dict[str, dict[str, np.ndarray]]:
    """{split: {"train": idx, "val": idx}} for the configured splits (indices into `difficulty`)."""
    sc, seed = cfg["splits"], cfg["seed"]
    members = split_members(difficulty, sc["bands"])
    wanted = list(sc["names"])
    needed = set(wanted)
    for mix in MIXTURE_SPLITS:
        if mix in wanted:
            needed |= {comp for comp, spec in sc["mixtures"][mix].items() if not isinstance(spec, dict)}
    out: dict[str, dict[str, np.ndarray]] = {}
    for i, name in enumerate(ALL_SPLITS[:4]):
        if name in needed:
            rng = np.random.default_rng([seed, 4, i])
            train, val = _train_val(members[name], sc["val_size"], sc["max_train_size"], rng, name)
            out[name] = {"train": train, "val": val}
    # Components over K samples: none of them trains on a problem any split validates on.
    held_out = np.unique(np.concatenate([np.asarray(p["val"]) for p in out.values()] + [np.array([], int)]))
    over_k: dict[tuple, dict[str, np.ndarray]] = {}
    for j, mix in enumerate(MIXTURE_SPLITS):
        if mix not in wanted:
            continue
        specs = sc["mixtures"][mix]
        for comp, spec in specs.items():
            key = (comp, *spec["band"]) if isinstance(spec, dict) else None
            if key is not None and key not in over_k:
                over_k[key] = _k_component(difficulty, spec["band"],
                                           held_out, sc["val_size"], np.random.default_rng([seed, 6, len(over_k)]),
                                           f"{mix}.{comp}")
        sources = {comp: over_k[(comp, *spec["band"])] if isinstance(spec, dict) else out[comp]
                   for comp, spec in specs.items()}
        weights = {comp: component_share(spec) for comp, spec in specs.items()}
        rng = np.random.default_rng([seed, 5, j])
        parts = {"train": [], "val": []}
        for part, total in (("train", sc["mix_size"]), ("val", sc["val_size"])):
            for comp, count in _proportional(total, weights).items():
                pool = sources[comp][part]
                if count > len(pool):
                    raise ConfigError(
                        f"config key 'splits.mix_size': mixture '{mix}' needs {count} {part} problems "
                        f"from '{comp}', which has {len(pool)}")
                parts[part].append(rng.choice(pool, count, replace=False))
        out[mix] = {k: np.sort(np.concatenate(v)) for k, v in parts.items()}
    return {k: out[k] for k in wanted}


def split_frame(pool: pd.DataFrame, difficulty: pd.DataFrame, idx: np.ndarray, split: str) -> pd.DataFrame:
    """Pool rows of a split in verl schema, with the base pass rate in extra_info."""
    rows = pool.iloc[idx].reset_index(drop=True).copy()
    rate = difficulty["avg_at_samples"].to_numpy()[idx]
    rows["extra_info"] = [
        {**dict(e), "split": split, "base_pass_rate": float(r)} for e, r in zip(rows["extra_info"], rate)
    ]
    return rows
