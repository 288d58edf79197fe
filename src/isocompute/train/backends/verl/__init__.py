"""The verl backend (cluster: verl's GRPO trainer with vLLM rollouts)."""

from isocompute.cluster.verl_backend import run_verl
from isocompute.train.backends import register_backend

register_backend("verl")(run_verl)
