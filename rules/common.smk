# Config checking, paths, wildcard constraints and the named input functions
# every stage uses. No grid or path logic lives inside rules.

import json
import sys

from isocompute.config import ConfigError, check_config

try:
    check_config(config)
except ConfigError as _err:
    # One line naming the key and what was expected, before any job is scheduled.
    sys.stderr.write(f"isocompute config error: {_err}\n")
    sys.exit(1)

EXP = config["experiment"]
RESULTS = f"results/{EXP}"
SPLITS = list(config["splits"]["names"])


wildcard_constraints:
    split="|".join(SPLITS) or "none",


def params_json(*sections):
    """The config sections a stage reads, as JSON for its --params."""
    keys = ("seed",) + sections
    return json.dumps({k: config[k] for k in keys}, sort_keys=True)


def base_model_input():
    """The embedded model directory when the pipeline builds it; nothing for a given path."""
    if config["base_model"]["source"] == "embedded":
        return f"{RESULTS}/model/base"
    return []


def base_model_path():
    if config["base_model"]["source"] == "embedded":
        return f"{RESULTS}/model/base"
    return config["base_model"]["path"]


def split_files(split):
    return {part: f"{RESULTS}/splits/{split}/{part}.parquet" for part in ("train", "val")}


def all_split_files():
    return [path for split in SPLITS for path in split_files(split).values()]


def data_targets():
    return all_split_files() + [f"{RESULTS}/figures/fig2_difficulty.png"]


def all_targets():
    return data_targets()
