"""GRPO training: the loss math (`grpo`), the local backend's loop (`local`),
and the run driver that dispatches to a backend and owns a run's files (`run`)."""
