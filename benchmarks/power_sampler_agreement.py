"""The power of tests/envs/test_twin_vllm_difficulty.py's agreement test, by simulation over seeds.

The local sampler stands in for vLLM: on the test's model and pool (a study folder holding
results/tinyvllm/model/base and data/pool.parquet, e.g. the test's basetemp, or one built by
the local stages with the test's CONFIG), it samples the difficulty stage at the study's
temperature and at TEMPERATURE_OFF under --seeds seeds each (the config's seed), then applies
the test's rule (`disagreement`: z, S and C) to pairs: each draw at TEMPERATURE_OFF against two
draws at the study's temperature (how often a mismatch of that size is flagged: the power), and
every pair of draws at the study's temperature (how often equal samplers are: false alarms).
About 5 s a draw on 2 cores.

    python benchmarks/power_sampler_agreement.py --study STUDY [--seeds 36] [--off 1.2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "envs"), str(REPO / "src")]


def draw(study: Path, temperature: float, seed: int) -> pd.Series:
    """The local sampler's correct counts at `temperature` under config seed `seed` (cached in the study)."""
    from test_twin_vllm_difficulty import CONFIG, RESULTS, counts_of

    from isocompute.config import check_config
    from isocompute.jobs import difficulty_params

    out = study / "power" / f"t{temperature}_s{seed}.parquet"
    if not out.exists():
        out.parent.mkdir(exist_ok=True)
        cfg = {**CONFIG, "seed": seed, "sampling": {**CONFIG["sampling"], "backend": "local",
                                                   "temperature": temperature}}
        params = difficulty_params(check_config(json.loads(json.dumps(cfg))))
        subprocess.run([sys.executable, "-c", "import sys; from isocompute.cli import main; sys.exit(main())",
                        "difficulty", "--params", json.dumps(params), "--pool", f"{RESULTS}/data/pool.parquet",
                        "--model", f"{RESULTS}/model/base", "--part", "0", "--parts", "1", "--threads", "1",
                        "--out", str(out)], cwd=study, check=True, capture_output=True, timeout=900)
    return counts_of(pd.read_parquet(out))


def main(argv=None) -> int:
    from test_twin_vllm_difficulty import CONFIG, TEMPERATURE_OFF, disagreement

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=36)
    parser.add_argument("--off", type=float, default=TEMPERATURE_OFF)
    args = parser.parse_args(argv)
    base, seeds = CONFIG["sampling"]["temperature"], range(1, args.seeds + 1)
    same = [draw(args.study, base, s) for s in seeds]
    off = [draw(args.study, args.off, s) for s in seeds]
    alarms = sum(disagreement(a, b)[0] for a, b in itertools.combinations(same, 2))
    pairs = [(same[(i + k) % len(same)], x) for i, x in enumerate(off) for k in (1, 5)]
    flagged = sum(disagreement(a, b)[0] for a, b in pairs)
    print(f"T {args.off} against T {base} (top-p {CONFIG['sampling']['top_p']}): flagged {flagged} of {len(pairs)}"
          f" pairs; T {base} against itself: {alarms} of {len(same) * (len(same) - 1) // 2} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
