"""The power of tests/envs/test_twin_vllm_difficulty.py's agreement test, by simulation over seeds.

The local sampler stands in for vLLM: on the test's model and pool (a study folder holding
results/<experiment>/model/base and data/pool.parquet and the config it was built with,
config/test.yaml: the test's basetemp, or one built by the local stages with the test's CONFIG),
it samples the difficulty stage at the study's temperature and at --off (default twice it, the
test's TEMPERATURE_OFF) under --seeds seeds each (the config's seed), then applies the test's
rule (isocompute.cluster.agreement.disagreement: z, S and C) to pairs: each draw at --off
against two draws at the study's temperature (how often a mismatch of that size is flagged: the
power), and every pair of draws at the study's temperature (how often equal samplers are: false
alarms). About 5 s a draw on 2 cores.

    python benchmarks/power_sampler_agreement.py --study STUDY [--config CONFIG] [--seeds 36] [--off 1.2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def draw(study: Path, config: dict, temperature: float, seed: int) -> pd.Series:
    """The local sampler's correct counts at `temperature` under config seed `seed` (cached in the study)."""
    from isocompute.config import check_config
    from isocompute.jobs import difficulty_params

    out = study / "power" / f"t{temperature}_s{seed}.parquet"
    results = f"results/{config['experiment']}"
    if not out.exists():
        out.parent.mkdir(exist_ok=True)
        cfg = {**config, "seed": seed, "sampling": {**config["sampling"], "backend": "local",
                                                   "temperature": temperature}}
        params = difficulty_params(check_config(json.loads(json.dumps(cfg))))
        subprocess.run([sys.executable, "-c", "import sys; from isocompute.cli import main; sys.exit(main())",
                        "difficulty", "--params", json.dumps(params), "--pool", f"{results}/data/pool.parquet",
                        "--model", f"{results}/model/base", "--part", "0", "--parts", "1", "--threads", "1",
                        "--out", str(out)], cwd=study, check=True, capture_output=True, timeout=900)
    table = pd.read_parquet(out)
    samples = config["difficulty"]["samples"]
    assert (table["samples"] == samples).all(), f"{out}: not {samples} samples a problem"
    return table.set_index("problem_id")["correct"].astype(int)


def main(argv=None) -> int:
    from isocompute.cluster.agreement import disagreement

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=Path, required=True)
    parser.add_argument("--config", type=Path, default=None,
                        help="the study's config (default: STUDY/config/test.yaml)")
    parser.add_argument("--seeds", type=int, default=36)
    parser.add_argument("--off", type=float, default=None, help="the other temperature (default: twice the study's)")
    args = parser.parse_args(argv)
    config = yaml.safe_load((args.config or args.study / "config" / "test.yaml").read_text())
    base, seeds, n = config["sampling"]["temperature"], range(1, args.seeds + 1), config["difficulty"]["samples"]
    off_t = 2 * base if args.off is None else args.off
    same = [draw(args.study, config, base, s) for s in seeds]
    off = [draw(args.study, config, off_t, s) for s in seeds]
    alarms = sum(disagreement(a, b, n)[0] for a, b in itertools.combinations(same, 2))
    pairs = [(same[(i + k) % len(same)], x) for i, x in enumerate(off) for k in (1, 5)]
    flagged = sum(disagreement(a, b, n)[0] for a, b in pairs)
    print(f"T {off_t} against T {base} (top-p {config['sampling']['top_p']}): flagged {flagged} of {len(pairs)}"
          f" pairs; T {base} against itself: {alarms} of {len(same) * (len(same) - 1) // 2} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
