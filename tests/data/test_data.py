"""Pool, real-dataset loader and splits: determinism, schema, closed interval
boundaries, train/val disjointness and mixture proportions."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from isocompute.config import ConfigError, check_config
from isocompute.data.pool import build_pool, evaluate
from isocompute.atomic import write_parquet
from isocompute.data.schema import COLUMNS, ground_truths, problem_ids, read_problems
from isocompute.data.splits import in_band, make_splits, split_frame
from isocompute.errors import InputError


def small_cfg(**over):
    cfg = {"pool": {"n_problems": 500}}
    cfg.update(over)
    return check_config(cfg)


def test_pool_is_deterministic_and_in_verl_schema(tmp_path):
    a, b = build_pool(small_cfg()), build_pool(small_cfg())
    pd.testing.assert_frame_equal(a, b)
    c = build_pool(small_cfg(seed=1))
    assert list(ground_truths(a)) != list(ground_truths(c))
    assert list(a.columns) == COLUMNS
    assert problem_ids(a).is_unique and len(a) == 500
    row = a.iloc[0]
    assert row["prompt"][0]["role"] == "user" and "\\boxed{}" in row["prompt"][0]["content"]
    assert row["reward_model"]["style"] == "rule"
    # Ground truths are the expressions' values.
    for e, gt in zip(a["extra_info"], ground_truths(a)):
        assert str(evaluate(e["expression"])) == gt
    # Graded difficulty: every family present in equal share.
    fams = a["extra_info"].map(lambda e: e["family"]).value_counts()
    assert len(fams) == 5 and fams.max() - fams.min() <= 1
    # Round trip through parquet keeps the schema.
    write_parquet(tmp_path / "pool.parquet", a)
    back = read_problems(tmp_path / "pool.parquet")
    assert list(problem_ids(back)) == list(problem_ids(a))


def test_too_many_problems_for_a_family_is_a_config_error():
    fam = [{"name": "tiny", "operands": 2, "digits": [1, 1], "ops": "+", "corpus_accuracy": 0.5}]
    with pytest.raises(ConfigError, match="pool.families"):
        build_pool(check_config({"pool": {"n_problems": 500, "families": fam}}))


def test_corpus_avoids_the_pool_and_does_not_depend_on_it():
    """The pretraining corpus never contains a pool problem; its draws come from a
    stream of their own, so a larger pool only removes draws, and a small family's
    whole expression space (minus the pool) is covered."""
    from isocompute.data.pool import Family
    from isocompute.model.embedded import build_corpus

    cfg = small_cfg()
    fams = [Family.from_config(f) for f in cfg["pool"]["families"]]
    pools = {n: build_pool(check_config({"pool": {"n_problems": n}})) for n in (500, 2000)}
    corpora = {}
    for n, pool in pools.items():
        exclude = set(pool["extra_info"].map(lambda e: e["expression"]))
        corpus = build_corpus(fams, 20000, 0, exclude, "")
        assert len(corpus) == 20000
        assert not set(corpus["problem"]) & set(pool["prompt"].map(lambda p: p[0]["content"]))
        correct = (corpus["target"] == corpus["truth"]).groupby(corpus["family"]).mean()
        for f in fams:  # targets are right with about the family's corpus accuracy
            assert abs(correct[f.name] - f.corpus_accuracy) < 0.05
        corpora[n] = corpus
    # Both corpora come from the same streams; the 2000-problem pool skips a few more
    # draws, which are made up at the streams' ends. So all but a few of its
    # problems are ones the 500-problem corpus drew too.
    small = set(corpora[500]["problem"])
    assert len(set(corpora[2000]["problem"]) - small) < 0.05 * len(small)
    add = corpora[500][corpora[500]["family"] == "add_small"]["problem"]
    assert add.nunique() > 2000  # 4,000 draws of 1-2 digit sums: distinct ones, not a few hundred repeated


def test_loader_maps_local_jsonl_and_parquet(tmp_path):
    rows = [{"problem": "What is 1/2 + 1/4?", "answer": "\\frac{3}{4}", "data_source": "math__toy"},
            {"problem": "Solve x+1=3.", "answer": "2", "data_source": "math__toy"},
            {"problem": "Name a prime.", "answer": "2", "data_source": "logic__toy"}]
    jl = tmp_path / "toy.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in rows))
    cfg = check_config({"pool": {"source": "file", "path": str(jl), "data_source": "math"}})
    pool = build_pool(cfg)
    assert list(pool.columns) == COLUMNS and len(pool) == 2
    assert list(ground_truths(pool)) == ["\\frac{3}{4}", "2"]
    assert pool["prompt"].iloc[0][0]["content"].endswith("\\boxed{}.")
    # A verl-schema parquet (e.g. Guru) passes through with its chat prompt.
    verl_rows = pd.DataFrame({
        "data_source": ["math__guru"], "ability": ["math"],
        "prompt": [[{"role": "user", "content": "Find 2+2. Put your final answer within \\boxed{}."}]],
        "reward_model": [{"style": "rule", "ground_truth": "4"}],
        "extra_info": [{"index": 0}],
    })
    pq = tmp_path / "guru.parquet"
    verl_rows.to_parquet(pq)
    pool = build_pool(check_config({"pool": {"source": "file", "path": str(pq)}}))
    assert pool["prompt"].iloc[0][0]["content"] == "Find 2+2. Put your final answer within \\boxed{}."
    assert list(ground_truths(pool)) == ["4"]


def test_loader_errors_name_the_file_and_column(tmp_path):
    with pytest.raises(InputError, match="pool.path"):
        build_pool(check_config({"pool": {"source": "file", "path": str(tmp_path / "none.jsonl")}}))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "1+1", "answer": "2"}))
    with pytest.raises(InputError, match="'problem'"):
        build_pool(check_config({"pool": {"source": "file", "path": str(bad)}}))


def test_band_boundaries_are_closed_and_exact():
    c = np.arange(17)
    easy = in_band(c, 16, 0.3, 0.6)
    assert list(c[easy]) == [5, 6, 7, 8, 9]  # 4.8 <= c <= 9.6
    hard = in_band(c, 16, 0.0, 0.0625)
    assert list(c[hard]) == [0, 1]  # 1/16 = 0.0625 is inside
    # Boundaries hit exactly with other sample counts: 3/10 = 0.3 and 6/10 = 0.6 are inside.
    assert list(np.arange(11)[in_band(np.arange(11), 10, 0.3, 0.6)]) == [3, 4, 5, 6]
    very_easy = in_band(c, 16, 0.6, 0.9)
    assert list(c[very_easy]) == [10, 11, 12, 13, 14]


def fake_difficulty(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    correct = rng.integers(0, 17, n)
    correct_k = np.where(correct == 0, rng.integers(0, 2, n), correct)
    return pd.DataFrame({"problem_id": [f"p{i}" for i in range(n)], "samples": 16, "correct": correct,
                         "samples_k": 64, "correct_k": correct_k, "avg_at_samples": correct / 16})


def test_splits_deterministic_disjoint_and_in_band():
    d = fake_difficulty()
    cfg = check_config({"splits": {"val_size": 50, "mix_size": 200}})
    s1, s2 = make_splits(d, cfg), make_splits(d, cfg)
    for name in s1:
        for part in ("train", "val"):
            assert np.array_equal(s1[name][part], s2[name][part])
        assert not set(s1[name]["train"]) & set(s1[name]["val"]), name
        assert len(s1[name]["val"]) == 50
    c = d["correct"].to_numpy()
    assert set(c[s1["easy"]["train"]]) <= {5, 6, 7, 8, 9}
    assert set(c[s1["hard"]["train"]]) <= {0, 1}
    assert (d["correct_k"].to_numpy()[s1["extremely_hard"]["train"]] == 0).all()
    # Another seed shuffles differently.
    s3 = make_splits(d, check_config({"seed": 7, "splits": {"val_size": 50, "mix_size": 200}}))
    assert not np.array_equal(s1["easy"]["val"], s3["easy"]["val"])


def test_mixtures_have_configured_proportions():
    d = fake_difficulty()
    cfg = check_config({"splits": {"val_size": 40, "mix_size": 200}})
    s = make_splits(d, cfg)
    c = d["correct"].to_numpy()
    dual, tri = s["dual"]["train"], s["tri"]["train"]
    assert len(dual) == 200 and len(tri) == 200
    assert (c[dual] <= 1).sum() == 100 and ((c[dual] >= 5) & (c[dual] <= 9)).sum() == 100
    assert (c[tri] <= 1).sum() == 100
    assert ((c[tri] >= 5) & (c[tri] <= 9)).sum() == 50 and ((c[tri] >= 10) & (c[tri] <= 14)).sum() == 50
    # Mixture validation problems never appear in the mixture's training set.
    assert not set(dual) & set(s["dual"]["val"])
    assert len(s["tri"]["val"]) == 40


def test_too_small_split_is_a_config_error():
    d = fake_difficulty(100)
    with pytest.raises(ConfigError, match="splits.val_size"):
        make_splits(d, check_config({"splits": {"val_size": 90, "names": ["easy"]}}))


def test_split_frame_keeps_schema_and_records_base_rate():
    pool = build_pool(small_cfg())
    d = fake_difficulty(500)
    d["problem_id"] = list(problem_ids(pool))
    f = split_frame(pool, d, np.array([3, 7]), "easy")
    assert list(f.columns) == COLUMNS
    assert f["extra_info"].iloc[1]["base_pass_rate"] == d["avg_at_samples"].iloc[7]
    assert f["extra_info"].iloc[0]["split"] == "easy"


class SeededFakeSampler:
    """Completions that depend only on the seed of the call and the prompt: '\\boxed{<answer or not>}'."""

    def __init__(self):
        self.seeds = []

    def sample(self, prompt_ids, n, params, seed=None, progress=None):
        self.seeds.append(seed)
        rng = np.random.default_rng(seed)
        return [[int(x) for x in rng.integers(0, 2, size=n)] for _ in prompt_ids]

    def decode(self, group):
        return ["\\boxed{1}" if hit else "\\boxed{0}" for hit in group]


def test_difficulty_parts_sample_whole_chunks_with_their_own_seeds(tmp_path):
    """Split into parallel parts, the pool's counts are those of one job: each part takes whole
    chunks, each chunk its seed (seed * 100003 + chunk, as before the split); parts resume."""
    from isocompute.data.difficulty import Draws, chunk_range, chunk_seed, difficulty_table, sample_counts
    from isocompute.sampling import SamplingParams

    pool = build_pool(small_cfg(pool={"n_problems": 230}))
    pool["reward_model"] = [{"ground_truth": "1", "style": "rule"}] * len(pool)
    kw = dict(draws=Draws(samples=4, extra_samples_k=8, params=SamplingParams(0.6, 1.0, 8), seed=3, chunk_size=50),
              render=lambda prompts: [[1]] * len(prompts))
    one = SeededFakeSampler()
    whole = sample_counts(pool, one, chunk_dir=tmp_path / "all", **kw)
    assert [chunk_range(230, 50, p, 3) for p in range(3)] == [range(0, 1), range(1, 3), range(3, 5)]
    parts, seeds = [], []
    for p in range(3):
        sampler = SeededFakeSampler()
        parts.append(sample_counts(pool, sampler, chunk_dir=tmp_path / f"p{p}", chunks=chunk_range(230, 50, p, 3),
                                   **kw))
        seeds += [s for s in sampler.seeds]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)
    assert sorted(set(seeds)) == sorted(set(one.seeds))
    assert {chunk_seed(3, c) for c in range(5)} <= set(one.seeds) and chunk_seed(3, 4) == 3 * 100003 + 4
    table = difficulty_table(pool, pd.concat(parts, ignore_index=True))
    assert list(table["avg_at_samples"]) == list(whole["correct"] / 4) and "family" in table
    with pytest.raises(InputError, match="re-run the difficulty_chunk jobs"):
        difficulty_table(pool, pd.concat(parts[:2], ignore_index=True))
    # A re-run part reads its finished chunks instead of sampling them again.
    again = SeededFakeSampler()
    sample_counts(pool, again, chunk_dir=tmp_path / "p1", chunks=chunk_range(230, 50, 1, 3), **kw)
    assert again.seeds == []
    # More parts than chunks: some parts have none.
    assert [len(chunk_range(230, 50, p, 8)) for p in range(8)] == [0, 1, 0, 1, 1, 0, 1, 1]


def fake_difficulty_k(n=3000, seed=0, K=64):
    """Every problem with K samples (the first 16 of them in `correct`)."""
    rng = np.random.default_rng(seed)
    correct_k = rng.integers(0, K + 1, n) * (rng.random(n) < 0.7)
    correct = np.minimum(correct_k // (K // 16), 16)
    return pd.DataFrame({"problem_id": [f"p{i}" for i in range(n)], "samples": 16, "correct": correct,
                         "samples_k": K, "correct_k": correct_k, "avg_at_samples": correct / 16})


PAPER_MIXTURES = {"dual": {"hard": {"share": 0.5, "band": [0.0, 0.0]}, "easy": {"share": 0.5, "band": [0.3, 0.6]}},
                  "tri": {"hard": {"share": 0.5, "band": [0.0, 0.0]}, "easy": {"share": 0.25, "band": [0.3, 0.6]},
                          "very_easy": {"share": 0.25, "band": [0.6, 0.9]}}}


def test_mixture_components_over_k_samples():
    """The paper's components (docs/methods.md section 10): Hard = none correct of K, Easy and Very Easy by
    rate bands over the same K; none trains on a problem another split validates on."""
    from isocompute.data.splits import needs_k_samples

    d = fake_difficulty_k()
    cfg = check_config({"difficulty": {"extremely_hard_samples": 64},
                        "splits": {"names": ["easy", "dual", "tri"], "val_size": 40, "mix_size": 200,
                                   "mixtures": PAPER_MIXTURES}})
    assert needs_k_samples(cfg) and not needs_k_samples(check_config({}))
    s = make_splits(d, cfg)
    rate = d["correct_k"].to_numpy() / 64
    for mix, total in (("dual", 200), ("tri", 200)):
        r = rate[s[mix]["train"]]
        assert len(r) == total and not set(s[mix]["train"]) & set(s[mix]["val"])
        assert (r == 0).sum() == 100        # Hard: none of K correct
        assert not set(s[mix]["train"]) & set(s["easy"]["val"])
    assert ((rate[s["dual"]["train"]] >= 0.3) & (rate[s["dual"]["train"]] <= 0.6)).sum() == 100
    tri = rate[s["tri"]["train"]]
    assert ((tri >= 0.3) & (tri <= 0.6)).sum() == 50 and ((tri > 0.6) & (tri <= 0.9)).sum() == 50
    # The default mixtures are unchanged: components from their avg@16 splits.
    d16 = fake_difficulty()
    default = make_splits(d16, check_config({"splits": {"val_size": 40, "mix_size": 200}}))
    assert (d16["correct"].to_numpy()[default["dual"]["train"]] <= 1).sum() == 100


def test_mixture_components_over_k_need_k_samples_and_a_valid_band():
    cfg = check_config({"difficulty": {"extremely_hard_samples": 128},
                        "splits": {"names": ["dual"], "val_size": 10, "mix_size": 50, "mixtures": PAPER_MIXTURES}})
    with pytest.raises(ConfigError, match=r"splits.mixtures.dual.hard.band': 0 problems"):
        make_splits(fake_difficulty_k().assign(correct_k=1), cfg)
    with pytest.raises(InputError, match="fewer than K = 64 samples.*re-run the difficulty stage"):
        d = fake_difficulty()
        make_splits(d.assign(samples_k=np.where(d["correct"] == 0, 64, 16)), cfg)
    bad = {"dual": {"hard": {"share": 0.5, "band": [0.2, 0.1]}, "easy": 0.5}}
    with pytest.raises(ConfigError, match=r"splits.mixtures.dual.hard.band"):
        check_config({"splits": {"mixtures": bad}})
    with pytest.raises(ConfigError, match=r"splits.mixtures.dual"):
        check_config({"splits": {"mixtures": {"dual": {"hard": {"share": 0.5}, "easy": 0.5}}}})
    with pytest.raises(ConfigError, match="sum to 1"):
        check_config({"splits": {"mixtures": {"dual": {"hard": {"share": 0.7, "band": [0, 0]}, "easy": 0.5}}}})


def test_difficulty_draws_k_samples_for_every_problem_on_request(tmp_path):
    from isocompute.data.difficulty import Draws, sample_counts
    from isocompute.sampling import SamplingParams

    pool = build_pool(small_cfg(pool={"n_problems": 60}))
    pool["reward_model"] = [{"ground_truth": "1", "style": "rule"}] * len(pool)
    draws = Draws(samples=4, extra_samples_k=12, params=SamplingParams(0.6, 1.0, 8), seed=3, chunk_size=50)
    kw = dict(render=lambda prompts: [[1]] * len(prompts))
    some = sample_counts(pool, SeededFakeSampler(), draws=draws, chunk_dir=tmp_path / "a", **kw)
    every = sample_counts(pool, SeededFakeSampler(), draws=replace(draws, k_for_all=True), chunk_dir=tmp_path / "b",
                          **kw)
    assert set(some["samples_k"]) == {4, 12} and set(every["samples_k"]) == {12}
    assert (every["correct_k"] >= every["correct"]).all() and (every["correct_k"] > every["correct"]).any()
    assert list(every["correct"]) == list(some["correct"])   # the first draws are the same


def test_a_ground_truth_with_boxes_apart_in_prose_is_refused_naming_its_row(tmp_path):
    # The grader, as math-verify, reads "First \boxed{1}. Later ... \boxed{2}" as its last box
    # alone; boxes joined by "and" are one answer of several parts and load as they are.
    from isocompute.data.schema import make_row
    from isocompute.errors import InputError

    def frame(truths):
        return pd.DataFrame([make_row(data_source="t", problem=f"p{i}", instruction="", answer=t, index=i,
                                      problem_id=f"id{i}", family="all") for i, t in enumerate(truths)])

    path = tmp_path / "ok.parquet"
    write_parquet(path, frame(["42", "\\boxed{1} and \\boxed{2}", "\\boxed{7}"]))
    assert len(read_problems(path)) == 3
    path = tmp_path / "apart.parquet"
    write_parquet(path, frame(["42", "First \\boxed{1}. Later we find \\boxed{2}"]))
    with pytest.raises(InputError, match=r"row 1 \(problem_id 'id1'\).*boxes apart in prose"):
        read_problems(path)
