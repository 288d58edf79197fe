"""The verl backend (cluster: verl's GRPO trainer with vLLM rollouts): `overrides`
(the command), `limits` (what verl cannot hold or drops), `files`, `resume`,
`dumps`, `pass_rates`, `run` (the entry point, registered as "verl") and
`reward.py`, which verl loads by path.
"""

from isocompute.train.backends.verl.files import VerlRunFiles, latest_checkpoint_step
from isocompute.train.backends.verl.overrides import VerlCommand, reward_function_path, verl_command, verl_overrides
from isocompute.train.backends.verl.run import run_verl

__all__ = ["VerlCommand", "VerlRunFiles", "latest_checkpoint_step", "reward_function_path", "run_verl",
           "verl_command", "verl_overrides"]
