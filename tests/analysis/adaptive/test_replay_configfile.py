"""`isocompute replay-adaptive EVALS --configfile CONFIG`: the sweep a study's
config would run, its whole sweep and analysis sections, the options on top."""

from __future__ import annotations

import json
import warnings

import pytest
import yaml

from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.cli import main
from isocompute.schedule import compute_schedule_steps

C_MAX = 2.0 ** 22
NS = (8, 32, 128, 512)
FAST = ["--probes", "4", "--eta", "2", "--rungs", "4"]


@pytest.fixture(scope="module")
def evals_path(tmp_path_factory):
    steps = lambda B, M: compute_schedule_steps(B, M, 161, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    study = synthetic_study((32,), NS, c_max=C_MAX, eval_steps=steps, noise=EvalNoise(sd=0.013, seed=3))
    path = tmp_path_factory.mktemp("replay") / "evals.csv"
    study.to_csv(path, index=False)
    return path


def _config(tmp_path, sections: dict, name: str = "study.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(sections))
    return path


def _replay_json(capsys, *args) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["replay-adaptive", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_configs_sweep_and_analysis_sections_reach_the_replay(tmp_path, evals_path, capsys):
    default = _replay_json(capsys, evals_path, *FAST)
    assert default["configfile"] is None and default["params"]["revive"] is True
    cfg = _config(tmp_path, {
        "sweep": {"mode": "adaptive", "epsilon": 0.5, "revive": False, "reach": 3.0,
                  "inflation": 1.5, "insurance": 0.25, "min_evals": 4, "z": 2.0},
        "analysis": {"metric": "avg@4", "pool": "none", "record_z": 3.0, "se_window": 5, "collapse_alpha": 0.0},
    })
    got = _replay_json(capsys, evals_path, *FAST, "--configfile", cfg)
    assert got["configfile"] == str(cfg)
    p = got["params"]
    assert (p["epsilon"], p["revive"], p["reach"], p["inflation"], p["insurance"], p["min_evals"],
            p["z"]) == (0.5, False, 3.0, 1.5, 0.25, 4, 2.0)
    a = got["analysis"]
    assert (a["pool"], a["record_z"], a["se_window"], a["collapse_alpha"], a["method"]) == ("none", 3.0, 5, 0.0, "noise")
    assert got["share"] != default["share"]


@pytest.mark.parametrize("sections, cheaper", [
    ({"sweep": {"epsilon": 0.5}}, True),         # a larger regret accepted: runs stop sooner
    ({"analysis": {"pool": "none"}}, False),     # no trend model: every run judged by its own, wider, band
])
def test_a_config_key_changes_the_bill(tmp_path, evals_path, capsys, sections, cheaper):
    default = _replay_json(capsys, evals_path, *FAST)
    got = _replay_json(capsys, evals_path, *FAST, "--configfile", _config(tmp_path, sections))
    assert (got["share"] < default["share"]) if cheaper else (got["share"] > default["share"])


def test_options_override_the_configs_values(tmp_path, evals_path, capsys):
    cfg = _config(tmp_path, {"sweep": {"eta": 4.0, "rungs": 2, "z": 3.0}, "analysis": {"metric": "avg@4"}})
    got = _replay_json(capsys, evals_path, "--configfile", cfg, "--probes", "4", "--eta", "2", "--rungs", "3")
    assert (got["params"]["eta"], got["params"]["rungs"], got["params"]["z"]) == (2.0, 3, 3.0)
    assert got["budgets"] == [C_MAX / 4, C_MAX / 2, C_MAX]


def test_a_config_with_one_rung_replays_the_full_grid(tmp_path, evals_path, capsys):
    cfg = _config(tmp_path, {"sweep": {"rungs": 1}})
    got = _replay_json(capsys, evals_path, "--configfile", cfg, "--probes", "4")
    assert got["share"] == 1.0 and got["params"]["rungs"] == 1


def test_the_text_names_the_config_and_the_settings(tmp_path, evals_path, capsys):
    cfg = _config(tmp_path, {"sweep": {"epsilon": 0.03, "revive": False}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["replay-adaptive", str(evals_path), *FAST, "--configfile", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "epsilon 0.03" in out and "revive False" in out and f"{cfg}'s sweep and analysis sections" in out


@pytest.mark.parametrize("sections, message", [
    ({"sweep": {"epsilon": -1}}, "'sweep.epsilon'"),
    ({"sweep": {"revive": "maybe"}}, "'sweep.revive'"),
    ({"analysis": {"pool": "sometimes"}}, "'analysis.pool'"),
    ({"sweep": {"no_such_key": 1}}, "no_such_key"),
])
def test_a_bad_config_is_one_line_naming_the_file_and_the_key(tmp_path, evals_path, capsys, sections, message):
    cfg = _config(tmp_path, sections, "bad.yaml")
    assert main(["replay-adaptive", str(evals_path), "--configfile", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(cfg) in err and message in err and "\n" not in err


def test_a_missing_config_is_one_line(tmp_path, evals_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert main(["replay-adaptive", str(evals_path), "--configfile", str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(missing) in err and "not found" in err and "\n" not in err
