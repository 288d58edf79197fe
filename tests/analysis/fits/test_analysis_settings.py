"""The analysis settings: one object, the schema's names and checks, registered strategies."""

import json
from dataclasses import fields

import pytest

from isocompute.analysis.fits.methods import METHODS
from isocompute.analysis.fits.pooled import POOLS
from isocompute.analysis.fits.settings import SCHEMA_KEYS, AnalysisSettings
from isocompute.cli import main
from isocompute.cli.analysis import SETTING_OPTIONS
from isocompute.config import load_schema, schema_defaults
from isocompute.errors import ConfigError


def test_one_name_per_setting_the_schema_key():
    names = [f.name for f in fields(AnalysisSettings)]
    assert names[:len(SCHEMA_KEYS)] == list(schema_defaults("analysis"))
    defaults = AnalysisSettings()
    for key, value in schema_defaults("analysis").items():
        if key not in ("metric", "observed_range"):      # resolved: avg@k, the method's default
            assert getattr(defaults, key) == value, key
    assert defaults.metric == "avg@4" and defaults.observed_range is True
    assert AnalysisSettings(method="paper").observed_range is False
    # Every schema key has analyze flags, and every flag's dest is a field.
    assert set(SCHEMA_KEYS) <= set(SETTING_OPTIONS) <= set(names)


def test_registries_are_the_schema_enums():
    props = load_schema()["properties"]["analysis"]["properties"]
    assert sorted(METHODS) == sorted(props["method"]["enum"])
    assert sorted(POOLS) == sorted(props["pool"]["enum"])


@pytest.mark.parametrize("bad", [dict(ci=1), dict(grid_points=1), dict(min_compute=-5), dict(method="bayes"),
                                 dict(pool="smooth"), dict(bootstrap=-1)])
def test_refuses_what_the_config_refuses(bad):
    key = next(iter(bad))
    with pytest.raises(ConfigError, match=f"analysis.{key}"):
        AnalysisSettings(**bad)


@pytest.mark.parametrize("option, value", [("--ci", "1"), ("--grid-points", "1"), ("--min-compute", "-5"),
                                           ("--ema", "0"), ("--pool", "smooth")])
def test_cli_refuses_naming_the_option(tmp_path, capsys, option, value):
    assert main(["analyze", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "out"), option, value]) == 2
    err = capsys.readouterr().err
    assert f"error: {option}: expected" in err and "missing.csv" not in err


def test_params_json_round_trip_and_older_files():
    s = AnalysisSettings(method="paper", ema_alpha=0.5, bootstrap=8, seed=3, bootstrap_studies=("joint",))
    assert AnalysisSettings.from_json(json.loads(json.dumps(s.as_json()))) == s
    old = AnalysisSettings.from_json({"method": "noise", "n_boot": 8, "extrapolate": True, "fit_a_step": 0.001,
                                      "split": "easy"})
    assert old.bootstrap == 8 and old.observed_range is False
    assert AnalysisSettings.from_json({}).method == "paper"      # before the noise method


def test_from_config_layers_options_over_the_section():
    cfg = {"analysis": {**schema_defaults("analysis"), "bootstrap": 50}, "seed": 7, "eval": {"k": 8}}
    s = AnalysisSettings.from_config(cfg, ci=0.9)
    assert (s.bootstrap, s.ci, s.seed, s.metric) == (50, 0.9, 7, "avg@8")
