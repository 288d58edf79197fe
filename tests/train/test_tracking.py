"""Experiment tracking (config `tracking`) without training: the schema's check, the job
contract (the trackers travel in the options file, outside the train params, so changing
them re-runs nothing), verl's loggers and their environment, a missing tracker package
named before any step, and an untracked run importing no tracker client. A local run's
trackers are tested on a real run in test_train_local.py, verl's TensorBoard logger in
test_pipeline_verl_cpu.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from isocompute import jobs
from isocompute.cli.common import config_from_params
from isocompute.config import check_config
from isocompute.errors import ConfigError
from isocompute.grid import Cell
from isocompute.layout import RunPaths
from isocompute.train import tracking
from support.verl import overrides_dict, verl_cfg

CELL = Cell("easy", 32, 8, 10, 2560)


def job_of(cfg: dict, cell=CELL):
    """A train job's config as `isocompute train` reads it: its params, and the options file
    when its rule passes one."""
    options = jobs.as_json(jobs.train_options(cfg)) if jobs.uses_train_options(cfg) else None
    return config_from_params(jobs.as_json(jobs.train_params(cfg, cell)), options)


def local_cfg(**tracked) -> dict:
    return check_config({"experiment": "t", "splits": {"names": ["easy", "hard"]},
                         **({"tracking": tracked} if tracked else {})})


def test_an_unknown_tracker_is_one_line_naming_tracking_backends():
    assert check_config({})["tracking"] == {"backends": [], "project": None, "dir": None, "wandb_mode": "offline"}
    for name in ("comet", "mlflow"):  # mlflow: not installable beside the pinned stack (docs/training.md)
        with pytest.raises(ConfigError, match=r"^config key 'tracking.backends\[0\]': expected one of \['wandb', "
                                              rf"'tensorboard'\], got '{name}'$"):
            check_config({"tracking": {"backends": [name]}})
    with pytest.raises(ConfigError, match=r"config key 'tracking.wandb_mode'"):
        check_config({"tracking": {"wandb_mode": "cloud"}})


def test_tracking_travels_outside_the_train_params():
    """Changing the trackers changes no train job's params (its rerun contract) or identity: they
    reach the job in the options file, an ancient input. An untracked local study passes no
    options file at all (its jobs are those of a study trained before tracking existed)."""
    untracked, tracked = local_cfg(), local_cfg(backends=["tensorboard"], project="p")
    assert jobs.train_params(untracked, CELL) == jobs.train_params(tracked, CELL)
    assert not jobs.uses_train_options(untracked) and jobs.uses_train_options(tracked)
    assert jobs.train_options(tracked) == {"tracking": tracked["tracking"]}
    assert tracking.tracking_of(job_of(untracked), CELL).backends == ()
    job = tracking.tracking_of(job_of(tracked), CELL)
    assert (job.backends, job.project, job.run) == (("tensorboard",), "p", "t-easy-bp32_n8")
    assert job.tensorboard_dir == Path("results/t/tracking/tensorboard/p/t-easy-bp32_n8")
    verl = verl_cfg(tracking={"backends": ["wandb"]})
    assert jobs.train_params(verl, CELL) == jobs.train_params(verl_cfg(), CELL)
    assert set(jobs.train_options(verl)) == {"cluster", "tracking"} and jobs.uses_train_options(verl_cfg())


def test_verl_logs_to_the_chosen_trackers_under_the_runs_name(tmp_path):
    from isocompute.train.backends.verl.overrides import verl_command

    paths = RunPaths(run_dir=str(tmp_path / "run"), train_file="t.parquet", val_file="v.parquet", model="m")
    plain = verl_command(job_of(verl_cfg()), CELL, paths)
    o = overrides_dict(plain.argv[3:])
    assert (o["trainer.logger"], o["trainer.project_name"], o["trainer.experiment_name"]) == (
        "[console,file]", "t", "t-easy-bp32_n8")
    assert not {"WANDB_MODE", "WANDB_DIR", "TENSORBOARD_DIR"} & set(plain.env)

    where = tmp_path / "trackers"
    cfg = verl_cfg(tracking={"backends": ["tensorboard", "wandb"], "project": "study", "dir": str(where)})
    command = verl_command(job_of(cfg), CELL, paths)
    o = overrides_dict(command.argv[3:])
    assert o["trainer.logger"] == "[console,file,tensorboard,wandb]"
    assert (o["trainer.project_name"], o["trainer.experiment_name"]) == ("study", "t-easy-bp32_n8")
    # What verl.utils.tracking reads, absolute (verl runs in the run's session folder).
    assert command.env["TENSORBOARD_DIR"] == str(where / "tensorboard" / "study" / "t-easy-bp32_n8")
    assert (command.env["WANDB_MODE"], command.env["WANDB_DIR"]) == ("offline", str(where))
    assert command.env["VERL_FILE_LOGGER_PATH"] == plain.env["VERL_FILE_LOGGER_PATH"]
    replicate = Cell("easy", 32, 8, 10, 2560, replicate=1)
    assert overrides_dict(verl_command(job_of(cfg, replicate), replicate, paths).argv[3:])[
        "trainer.experiment_name"] == "t-easy-bp32_n8_s1"


def test_a_missing_tracker_package_is_named_before_any_step(tmp_path, monkeypatch):
    monkeypatch.setitem(tracking.PACKAGES, "wandb", "isocompute_no_such_tracker")
    cfg = local_cfg(backends=["tensorboard", "wandb"], dir=str(tmp_path / "t"))
    with pytest.raises(ConfigError, match=r"^config key 'tracking.backends': wandb is not installed in this "
                                          r"training environment \(pip install isocompute_no_such_tracker"):
        tracking.prepare(tracking.tracking_of(cfg, CELL))
    assert not (tmp_path / "t").exists()
    tracking.prepare(tracking.tracking_of(local_cfg(backends=["tensorboard"], dir=str(tmp_path / "t")), CELL))
    assert (tmp_path / "t").is_dir()


def test_an_untracked_run_imports_no_tracker_client():
    code = ("import sys; import isocompute.train.backends.local.trainer, isocompute.train.backends.local.tracking; "
            "import isocompute.train.backends.verl.run; "
            "print(sorted(m for m in ('wandb', 'torch.utils.tensorboard') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
