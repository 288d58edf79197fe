"""What verl 0.9.1 cannot hold or silently drops, checked before a run: a grid
batch beyond its transfer queue's capacity stops at config time; the prompts
its overlong filter drops are counted exactly as verl's dataset drops them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from isocompute.errors import ConfigError
from isocompute.grid import Cell, grid_cells
from isocompute.train.backends.verl.limits import (TRANSFER_QUEUE_CAPACITY, check_batch_capacity, samples_held,
                                                   transfer_queue_capacity)
from support.verl import verl_cfg


def test_the_capacity_is_verls():
    """The constant is what verl 0.9.1 configures for its transfer queue's storage."""
    import verl

    config = Path(verl.__file__).parent / "trainer" / "config" / "transfer_queue" / "transfer_queue.yaml"
    storage = yaml.safe_load(config.read_text())["backend"]
    assert storage["storage_backend"] == "SimpleStorage"
    assert storage["SimpleStorage"]["total_storage_size"] == TRANSFER_QUEUE_CAPACITY


def test_grids_beyond_the_transfer_queue_stop_with_the_split_named():
    cfg = verl_cfg(grid={"easy": {"B_p": [32, 64], "n": [1024, 2048], "B_max": 131072, "C_max": 131072}},
                   splits={"names": ["easy"], "val_size": 300})
    # B_p = 32, n = 2048 holds 65,536 trajectories + 300 x 5 validation samples: fits.
    assert samples_held(32, 2048, 300, 4) == 32 * 2048 + 300 * 5
    check_batch_capacity(cfg, [c for c in grid_cells(cfg) if c.B_p * c.n <= 65536])
    with pytest.raises(ConfigError, match=r"'grid.easy': cell B_p = 64, n = 2048 puts 132,572 samples"):
        check_batch_capacity(cfg, grid_cells(cfg))
    # The validation that follows a step counts: a big validation set tips a batch over.
    with pytest.raises(ConfigError, match="grid.easy"):
        check_batch_capacity(cfg, [Cell("easy", 32, 2048, 1, 65536)], val_problems=7000)
    # A site that raises verl's storage size raises the limit with it.
    raised = verl_cfg(cluster={"verl": {"extra_overrides": [
        "transfer_queue.backend.SimpleStorage.total_storage_size=200000"]}})
    assert transfer_queue_capacity(raised) == 200000
    check_batch_capacity(raised, [Cell("easy", 64, 2048, 1, 131072)])


def test_the_paper_configs_fit():
    from support import REPO
    from isocompute.config import load_config

    for path in sorted((REPO / "config" / "paper").glob("*.yaml")):
        cfg = load_config(path)
        check_batch_capacity(cfg, grid_cells(cfg))


def test_dropped_prompts_are_counted_as_verls_dataset_drops_them(tmp_path):
    """The count equals what verl's own RLHFDataset keeps; a split losing more than the
    configured share stops before verl starts, naming the key to raise."""
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from isocompute.data.pool import Family, embedded_pool
    from isocompute.model.tokenizer import build_char_tokenizer
    from isocompute.train.backends.verl.limits import dropped_prompts, prompt_lengths

    tok = build_char_tokenizer()
    pool = embedded_pool([Family("a", 2, (1, 3), "+", 0.5), Family("b", 4, (1, 3), "+-", 0.5)], 40, 0,
                         "Put it in \\boxed{}.")
    split = tmp_path / "train.parquet"
    pool.to_parquet(split)
    lengths = prompt_lengths(split, tok)
    limit = sorted(lengths)[len(lengths) // 2]
    verl_cfg_ = OmegaConf.create({"max_prompt_length": limit, "filter_overlong_prompts": True,
                                  "filter_overlong_prompts_workers": 1, "cache_dir": str(tmp_path / "cache")})
    kept_by_verl = len(RLHFDataset([str(split)], tok, verl_cfg_, processor=None))
    counted = dropped_prompts({"train": split}, "unused", limit, 1.0, tokenizer=tok)["train"]
    assert 0 < counted["dropped"] < len(lengths)
    assert counted["prompts"] - counted["dropped"] == kept_by_verl
    assert counted["longest"] == max(lengths)
    with pytest.raises(ConfigError, match="cluster.verl.max_prompt_length.*max_dropped_prompt_share"):
        dropped_prompts({"train": split}, "unused", limit, 0.05, tokenizer=tok)
    assert dropped_prompts({"train": split}, "unused", max(lengths), 0.0, tokenizer=tok)["train"]["dropped"] == 0
