"""The adaptive sweep's plumbing (isocompute.sweep, `isocompute adaptive-decide`):
each cell's stop step at each rung, and the decision at a rung written from a
study's evaluations (a synthetic study with a crossover, noise 0.013) into the
decisions file the next rung reads."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from isocompute.analysis.fits.synthetic import EvalNoise, synthetic_study
from isocompute.cli import main
from isocompute.config import check_config
from isocompute.grid import Cell
from isocompute.jobs import as_json, decide_params, train_options, train_params
from isocompute.schedule import compute_schedule_steps
from isocompute.sweep import continuing_runs, rung_computes, rung_stop_steps, stop_step

C_MAX = 2.0 ** 22


def test_rungs_stop_each_cell_within_the_rungs_compute():
    cfg = check_config({"sweep": {"mode": "adaptive", "eta": 4, "rungs": 3}})
    assert rung_computes(cfg, 64) == [4.0, 16.0, 64.0]
    assert rung_stop_steps(cfg, Cell("easy", 2, 2, 16, 64)) == [1, 4, 16]
    assert rung_stop_steps(cfg, Cell("easy", 2, 3, 10, 64)) == [1, 2, 10]   # 16 / 6: the last step within
    assert rung_stop_steps(cfg, Cell("easy", 2, 8, 4, 64)) == [1, 1, 4]     # at least one step
    assert stop_step(Cell("easy", 1, 3, 33, 100), 99.0) == 33 and stop_step(Cell("easy", 1, 3, 33, 100), 1e9) == 33


def write_runs(tmp_path, study: pd.DataFrame, rung_compute: float) -> dict:
    """Each run's table up to the rung, as score_rung writes it (split, run, seed columns)."""
    paths = {}
    for (B_p, n), run in study.groupby(["B_p", "n"]):
        name = f"bp{B_p}_n{n}"
        run = run[run["compute"] <= rung_compute].assign(split="easy", run=name, seed=0)
        paths[name] = tmp_path / f"{name}.parquet"
        run.to_parquet(paths[name])
    return paths


def test_adaptive_decide_writes_which_runs_go_on(tmp_path):
    ns = (8, 16, 32, 64, 128, 256, 512)
    steps = lambda B, M: compute_schedule_steps(B, M, 161, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    study = synthetic_study((32,), ns, c_max=C_MAX, eval_steps=steps, noise=EvalNoise(sd=0.013, seed=7))
    rung = C_MAX / 4
    paths = write_runs(tmp_path, study, rung)
    # bp32_n8 was stopped at an earlier rung: its evaluations count, it gets no decision.
    stopped = study[(study["n"] == 8) & (study["compute"] <= rung / 4)].assign(split="easy", run="bp32_n8", seed=0)
    stopped.to_parquet(tmp_path / "stopped.parquet")
    out = tmp_path / "decisions.csv"
    params = as_json(decide_params(check_config({"sweep": {"mode": "adaptive", "eta": 4, "rungs": 3}})))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["adaptive-decide", "--params", params, "--trained",
                     *(str(p) for name, p in paths.items() if name != "bp32_n8"),
                     "--stopped", str(tmp_path / "stopped.parquet"), "--rung", "1", "--rung-compute", str(rung),
                     "--c-max", str(C_MAX), "--out", str(out), "--out-evals", str(tmp_path / "seen.parquet")]) == 0
    decisions = pd.read_csv(out).set_index("n")
    assert sorted(decisions.index) == [8, 16, 32, 64, 128, 256, 512]      # the stopped run too
    assert (decisions["rung"] == 1).all() and (decisions["rung_compute"] == rung).all()
    assert (decisions["stop_step"] == [study[(study["n"] == n) & (study["compute"] <= (rung / 4 if n == 8 else rung))]
                                       ["step"].max() for n in decisions.index]).all()
    assert not decisions.loc[16, "continue"] and decisions.loc[512, "continue"]
    # bp32_n8 goes on only where the safety net resumes it, and says which.
    assert decisions.loc[8, "reason"] == ("stopped at an earlier rung" if not decisions.loc[8, "continue"]
                                          else decisions.loc[8, "reason"])
    assert decisions.loc[8, "continue"] == decisions.loc[8, "reason"].startswith("revived")
    assert continuing_runs(out) == {f"bp32_n{n}" for n in decisions.index[decisions["continue"]]}
    assert len(pd.read_parquet(tmp_path / "seen.parquet")) == sum(len(pd.read_parquet(p)) for p in paths.values()) \
        - len(pd.read_parquet(paths["bp32_n8"])) + len(stopped)


def test_adaptive_decide_needs_runs_trained_to_the_rung(tmp_path, capsys):
    params = as_json(decide_params(check_config({"sweep": {"mode": "adaptive"}})))
    code = main(["adaptive-decide", "--params", params, "--trained", str(tmp_path / "none.parquet"), "--rung", "0",
                 "--rung-compute", "1", "--c-max", "4", "--out", str(tmp_path / "d.csv"),
                 "--out-evals", str(tmp_path / "e.parquet")])
    assert code == 2 and "evaluation table not found" in capsys.readouterr().err
    assert not (tmp_path / "d.csv").exists()


@pytest.mark.parametrize("stop", [0, 17])
def test_train_rejects_a_stop_outside_the_run(tmp_path, capsys, stop):
    for name in ("train.parquet", "val.parquet"):
        (tmp_path / name).write_text("")
    cfg = check_config({})
    params = as_json(train_params(cfg, Cell("easy", 2, 2, 16, 64)))
    (tmp_path / "options.json").write_text(as_json(train_options(cfg)))
    code = main(["train", "--params", params, "--options", str(tmp_path / "options.json"), "--split", "easy",
                 "--bp", "2", "--n", "2", "--max-steps", "16",
                 "--rung", "0", "--stop-at-step", str(stop), "--train-file", str(tmp_path / "train.parquet"),
                 "--val-file", str(tmp_path / "val.parquet"), "--model", str(tmp_path / "model"),
                 "--run-dir", str(tmp_path / "run")])
    assert code == 2 and f"--stop-at-step: expected a step in [1, M_max = 16], got {stop}" in capsys.readouterr().err
    assert not (tmp_path / "run" / "metrics.jsonl").exists()       # refused before the backend ran


def test_a_cells_seed_replicates_share_its_decision(tmp_path):
    steps = lambda B, M: compute_schedule_steps(B, M, 161, min_compute=C_MAX / 2 ** 10, c_max=C_MAX)  # noqa: E731
    study = synthetic_study((32,), (8, 64, 512), c_max=C_MAX, eval_steps=steps,
                            noise=EvalNoise(sd=0.013, seed=7, seeds=2))
    files = []
    for (B_p, n, seed), run in study.groupby(["B_p", "n", "seed"]):
        name = f"bp{B_p}_n{n}" + (f"_s{seed}" if seed else "")
        files.append(str(tmp_path / f"{name}.parquet"))
        run[run["compute"] <= C_MAX / 4].assign(split="easy", run=name).to_parquet(files[-1])
    out = tmp_path / "decisions.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        params = as_json(decide_params(check_config({"sweep": {"mode": "adaptive"}})))
        assert main(["adaptive-decide", "--params", params, "--trained", *files,
                     "--rung", "3", "--rung-compute", str(C_MAX / 4), "--c-max", str(C_MAX), "--out", str(out),
                     "--out-evals", str(tmp_path / "seen.parquet")]) == 0
    decisions = pd.read_csv(out)
    assert len(decisions) == 6 and (decisions.groupby("n")["continue"].nunique() == 1).all()
    assert continuing_runs(out) == {"bp32_n64", "bp32_n64_s1", "bp32_n512", "bp32_n512_s1"}


def test_the_sweeps_dag_follows_each_decision():
    """Rung by rung (isocompute.sweep, pure over what each decision let go on)."""
    from isocompute.sweep import cells_at_rung, stopped_before, where_runs_ended

    cfg = check_config({"sweep": {"mode": "adaptive", "rungs": 3}})
    cells = [Cell("easy", 2, n, 64 // (2 * n), 64) for n in (2, 4, 8)] + [Cell("hard", 2, 2, 16, 64)]
    going = {("easy", 0): {"bp2_n4", "bp2_n8"}, ("easy", 1): {"bp2_n8"}}
    asked = []

    def go(split, rung):
        asked.append((split, rung))
        return going[(split, rung)]

    assert [c.name for c in cells_at_rung(cells, "easy", 0, go)] == ["bp2_n2", "bp2_n4", "bp2_n8"]
    assert asked == []  # rung 0 waits for no decision
    assert [c.name for c in cells_at_rung(cells, "easy", 2, go)] == ["bp2_n8"]
    assert [(c.name, r) for c, r in stopped_before(cells, "easy", 1, go)] == [("bp2_n2", 0)]
    assert [(c.name, r) for c, r in stopped_before(cells, "easy", 2, go)] == [("bp2_n2", 0), ("bp2_n4", 1)]
    ended = where_runs_ended(cfg, cells, "easy", go)
    assert [(c.name, r) for c, r in ended] == [("bp2_n2", 0), ("bp2_n4", 1), ("bp2_n8", None)]


def test_a_run_the_safety_net_resumes_goes_on_from_where_it_stopped():
    """bp2_n2 stops at rung 0 and is resumed by the decision at rung 1: it trains to rung 2 from
    its rung-0 checkpoint, and ends as a full run."""
    from isocompute.sweep import cells_at_rung, last_rungs, stopped_before, where_runs_ended

    cfg = check_config({"sweep": {"mode": "adaptive", "rungs": 3}})
    cells = [Cell("easy", 2, n, 64 // (2 * n), 64) for n in (2, 4, 8)]
    going = {("easy", 0): {"bp2_n4", "bp2_n8"}, ("easy", 1): {"bp2_n2", "bp2_n8"}}
    go = lambda split, rung: going[(split, rung)]  # noqa: E731
    assert [c.name for c in cells_at_rung(cells, "easy", 1, go)] == ["bp2_n4", "bp2_n8"]
    assert [c.name for c in cells_at_rung(cells, "easy", 2, go)] == ["bp2_n2", "bp2_n8"]
    # Its previous marker at rung 2 is its rung-0 one; bp2_n4's evaluations at rung 1 count at rung 2.
    assert [(c.name, r) for c, r in last_rungs(cells, "easy", 1, go)] == [("bp2_n2", 0), ("bp2_n4", 1), ("bp2_n8", 1)]
    assert [(c.name, r) for c, r in stopped_before(cells, "easy", 2, go)] == [("bp2_n4", 1)]
    ended = where_runs_ended(cfg, cells, "easy", go)
    assert [(c.name, r) for c, r in ended] == [("bp2_n2", None), ("bp2_n4", 1), ("bp2_n8", None)]
