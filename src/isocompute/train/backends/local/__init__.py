"""The local GRPO backend (CPU or one GPU): the run loop and GRPO state in
`trainer`, what goes in and out of the model in `rollouts`. Importing the
package registers the backend as "local"."""

from isocompute.train.backends.local.rollouts import (Problems, derived_seed, evaluate, pack_responses,
                                                      problems_for_step, response_logits)
from isocompute.train.backends.local.trainer import LocalGRPO, train_local

__all__ = ["LocalGRPO", "Problems", "derived_seed", "evaluate", "pack_responses", "problems_for_step",
           "response_logits", "train_local"]
