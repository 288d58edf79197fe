"""Converting a verl run's FSDP checkpoint into a Hugging Face model
(`isocompute.cluster.checkpoints`, `isocompute verl-merge`): the command is
what verl's model merger parses, and the model directory appears whole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from isocompute.cluster.checkpoints import actor_checkpoint_dir, convert_checkpoint, merge_command
from isocompute.errors import InputError
from support import VENV_BIN
from support.verl import fake_checkpoint


def test_merge_command_is_what_verls_merger_parses(tmp_path, monkeypatch):
    run = tmp_path / "run"
    fake_checkpoint(run, 20)
    actor = actor_checkpoint_dir(run)
    assert actor == run / "checkpoints" / "global_step_20" / "actor"
    argv = merge_command(actor, tmp_path / "hf", python="python")
    assert argv[:6] == ["python", "-m", "verl.model_merger", "merge", "--backend", "fsdp"]
    from verl.model_merger.base_model_merger import parse_args

    monkeypatch.setattr(sys, "argv", ["verl.model_merger", *argv[3:]])
    args = parse_args()
    assert (args.operation, args.backend, args.local_dir, args.target_dir) == \
        ("merge", "fsdp", str(actor.resolve()), str((tmp_path / "hf").resolve()))
    from verl.model_merger.base_model_merger import generate_config_from_args

    assert generate_config_from_args(args).hf_model_config_path == str(actor.resolve() / "huggingface")
    with pytest.raises(InputError, match="global_step_7"):
        actor_checkpoint_dir(run, 7)
    with pytest.raises(InputError, match="no complete verl checkpoint"):
        actor_checkpoint_dir(tmp_path / "empty")


def test_convert_checkpoint_publishes_a_complete_directory(tmp_path):
    run = tmp_path / "run"
    fake_checkpoint(run, 4)

    def merger(argv):
        target = Path(argv[argv.index("--target_dir") + 1])
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")
        return subprocess.CompletedProcess(argv, 0)

    out = convert_checkpoint(run, tmp_path / "hf" / "final", runner=merger)
    assert (out / "config.json").is_file() and not (tmp_path / "hf" / ".final.tmp").exists()
    with pytest.raises(RuntimeError, match="no config.json"):
        convert_checkpoint(run, tmp_path / "hf" / "bad", runner=lambda argv: subprocess.CompletedProcess(argv, 0))


def test_verl_merge_cli_prints_the_command(tmp_path):
    fake_checkpoint(tmp_path / "run", 8)
    proc = subprocess.run([str(VENV_BIN / "isocompute"), "verl-merge", "--run-dir", str(tmp_path / "run"),
                           "--out", str(tmp_path / "hf"), "--print-only"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "-m verl.model_merger merge --backend fsdp --local_dir" in proc.stdout
    assert "global_step_8/actor" in proc.stdout
