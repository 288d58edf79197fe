"""The verl training backend: one grid cell = one `python -m verl.trainer.main_ppo`
run whose Hydra overrides are generated from the config, writing the same run
files as the local backend so that scoring and analysis are shared.

    run_dir/generations/{step}.jsonl   verl's validation_data_dir dumps (+ sample, n_tokens)
    run_dir/metrics.jsonl              verl's file logger, merged across resumed sessions
    run_dir/train_pass_rates.jsonl     per step and problem, from verl's rollout dumps
    (these three as `isocompute.run_files` lays them out), and verl's own:
    run_dir/checkpoints/               verl's FSDP checkpoints (resume_mode=auto)
    run_dir/verl/                      this session's command, verl's log, Hydra's record

`verl_overrides` is a pure function of (config, cell, paths, resume state);
`run_verl` owns the files around the subprocess: it resumes from the last
checkpoint, keeps the metrics of earlier sessions (verl's file logger truncates
its file on start), and checks that the run reached M_max.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from isocompute.errors import ConfigError, InputError
from isocompute.layout import RunFiles

log = logging.getLogger(__name__)

# What verl 0.9.1 reads: the Hydra entry point, the env var its file logger
# takes its path from (verl.utils.tracking.FileLogger), and the files its
# checkpoint manager writes under trainer.default_local_dir.
VERL_ENTRY = "verl.trainer.main_ppo"
FILE_LOGGER_ENV = "VERL_FILE_LOGGER_PATH"
LATEST_CHECKPOINT_FILE = "latest_checkpointed_iteration.txt"
REWARD_FUNCTION_NAME = "compute_score"
IDENTITY_FILE = "isocompute_identity.json"
POLL_S = 30.0  # how often run_verl turns finished rollout dumps into pass rates


# --- the recipe as numbers -----------------------------------------------------

def learning_rate(train: dict, rollouts_per_step: int) -> float:
    """lr = lr_base * (B / B_ref)^p, p = 1/2 (sqrt), 1 (linear) or 0 (constant) -- METHODS section 3."""
    power = {"sqrt": 0.5, "linear": 1.0, "constant": 0.0}[train["lr_scaling"]]
    return float(train["lr_base"]) * (rollouts_per_step / float(train["B_ref"])) ** power


def is_regularized(cfg: dict, split: str) -> bool:
    """KL-to-base plus entropy bonus on these splits (Easy), neither elsewhere (Hard, mixtures)."""
    return split in cfg["train"]["regularized_splits"]


def evaluation_steps(max_steps: int, interval: int) -> list[int]:
    """Steps verl validates at: 0 (val_before_train), every K steps, and the last step."""
    steps = set(range(0, max_steps + 1, interval)) | {max_steps}
    return sorted(steps)


# --- paths ---------------------------------------------------------------------

@dataclass(frozen=True)
class VerlRunFiles(RunFiles):
    """Absolute paths of one run's files: the shared ones and verl's own."""

    @property
    def checkpoints(self) -> Path:
        return self.run_dir / "checkpoints"

    @property
    def session_dir(self) -> Path:
        return self.run_dir / "verl"

    @property
    def session_metrics(self) -> Path:
        """Where verl's file logger writes during one session (truncated at each start)."""
        return self.session_dir / "metrics.session.jsonl"

    @property
    def session_log(self) -> Path:
        return self.session_dir / "main_ppo.log"

    @property
    def rollouts(self) -> Path:
        """verl's training-rollout dumps (trainer.rollout_data_dir), read into pass rates and deleted."""
        return self.session_dir / "rollouts"


def reward_function_path() -> Path:
    """The file verl loads the reward function from (this package's reward.py)."""
    from isocompute.cluster import reward

    return Path(reward.__file__).resolve()


def latest_checkpoint_step(checkpoints: Path) -> int | None:
    """The step of the last complete verl checkpoint, or None.

    verl writes `latest_checkpointed_iteration.txt` after a checkpoint is
    complete, so a job killed mid-save resumes from the previous one.
    """
    marker = Path(checkpoints) / LATEST_CHECKPOINT_FILE
    if not marker.is_file():
        return None
    text = marker.read_text().strip()
    if not text.isdigit():
        return None
    step = int(text)
    return step if (Path(checkpoints) / f"global_step_{step}").is_dir() else None


# --- Hydra overrides --------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z0-9_./:@+-]+$")


def hydra_value(value) -> str:
    """A Python value as a Hydra override value (quoted where Hydra's grammar needs it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot pass a non-finite number to verl: {value}")
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in ("true", "false", "null") and not _looks_numeric(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_supported(cfg: dict) -> None:
    """Recipe options the verl backend cannot honour stop here, naming the key."""
    train = cfg["train"]
    if train["zero_variance_filter"]:
        raise ConfigError("config key 'train.zero_variance_filter': not supported by the verl backend "
                          "(verl's filter_groups resamples prompts, which changes the compute accounting); "
                          "use train.backend local for this ablation")
    if train["decoupled_baseline"]["enabled"]:
        raise ConfigError("config key 'train.decoupled_baseline.enabled': not supported by the verl backend; "
                          "use train.backend local for this ablation")
    v = cfg["cluster"]["verl"]
    need = v["max_prompt_length"] + train["max_response_length"]
    if v["max_token_len_per_gpu"] < need:
        raise ConfigError(f"config key 'cluster.verl.max_token_len_per_gpu': must be at least "
                          f"cluster.verl.max_prompt_length + train.max_response_length = {need}, "
                          f"got {v['max_token_len_per_gpu']}")
    gpus = cfg["cluster"]["train"]["gpus"]
    if gpus % v["rollout_tensor_parallel"]:
        raise ConfigError(f"config key 'cluster.verl.rollout_tensor_parallel': must divide cluster.train.gpus "
                          f"= {gpus}, got {v['rollout_tensor_parallel']}")


def recipe_overrides(cfg: dict, cell) -> dict:
    """The healthy-GRPO recipe of METHODS section 3 as verl keys, for one grid cell."""
    train, samp, ev = cfg["train"], cfg["sampling"], cfg["eval"]
    reg = is_regularized(cfg, cell.split)
    rollouts = cell.B_p * cell.n
    return {
        "algorithm.adv_estimator": "grpo",
        "algorithm.norm_adv_by_std_in_grpo": bool(train["norm_adv_by_std"]),
        "algorithm.use_kl_in_reward": False,
        # Truncated importance sampling between vLLM's and the trainer's log-probs.
        "algorithm.rollout_correction.rollout_is": "token" if train["tis"] else None,
        "algorithm.rollout_correction.rollout_is_threshold": float(train["tis_cap"]),
        "data.train_batch_size": cell.B_p,
        "data.max_response_length": int(train["max_response_length"]),
        "data.seed": int(cfg["seed"]),
        # One policy update per step (fully on-policy): the mini-batch is the whole batch.
        "actor_rollout_ref.actor.ppo_mini_batch_size": cell.B_p,
        "actor_rollout_ref.actor.ppo_epochs": 1,
        "actor_rollout_ref.actor.optim.lr": learning_rate(train, rollouts),
        "actor_rollout_ref.actor.optim.lr_warmup_steps": int(train["warmup_steps"]),
        "actor_rollout_ref.actor.optim.lr_scheduler_type": "constant",
        "actor_rollout_ref.actor.optim.weight_decay": float(train["weight_decay"]),
        "actor_rollout_ref.actor.optim.clip_grad": float(train["grad_clip"]),
        "actor_rollout_ref.actor.clip_ratio": float(train["clip_ratio"]),
        "actor_rollout_ref.actor.clip_ratio_low": float(train["clip_ratio"]),
        "actor_rollout_ref.actor.clip_ratio_high": float(train["clip_ratio"]),
        "actor_rollout_ref.actor.loss_agg_mode": train["loss_agg_mode"],
        "actor_rollout_ref.actor.use_kl_loss": reg,
        "actor_rollout_ref.actor.kl_loss_type": train["kl_type"],
        "actor_rollout_ref.actor.kl_loss_coef": float(train["kl_coef"]) if reg else 0.0,
        "actor_rollout_ref.actor.entropy_coeff": float(train["entropy_coef"]) if reg else 0.0,
        "actor_rollout_ref.rollout.n": cell.n,
        "actor_rollout_ref.rollout.temperature": float(samp["temperature"]),
        "actor_rollout_ref.rollout.top_p": float(samp["top_p"]),
        "actor_rollout_ref.rollout.do_sample": True,
        "actor_rollout_ref.rollout.calculate_log_probs": True,
        "actor_rollout_ref.rollout.seed": int(cfg["seed"]),
        "actor_rollout_ref.rollout.val_kwargs.n": int(ev["samples"]),
        "actor_rollout_ref.rollout.val_kwargs.temperature": float(samp["temperature"]),
        "actor_rollout_ref.rollout.val_kwargs.top_p": float(samp["top_p"]),
        "actor_rollout_ref.rollout.val_kwargs.do_sample": True,
        "trainer.total_training_steps": cell.M_max,
        # verl stops at whichever comes first; M_max epochs is an upper bound
        # (an epoch is at least one step), so the step count decides.
        "trainer.total_epochs": max(1, cell.M_max),
        "trainer.test_freq": int(train["eval_interval"]),
        "trainer.save_freq": int(train["eval_interval"]),
    }


def engineering_overrides(cfg: dict) -> dict:
    """Hardware and engine settings (cluster.verl / cluster.train): no effect on the science."""
    v, job = cfg["cluster"]["verl"], cfg["cluster"]["train"]
    return {
        "data.max_prompt_length": int(v["max_prompt_length"]),
        "data.filter_overlong_prompts": True,
        "data.truncation": "error",
        "actor_rollout_ref.model.enable_gradient_checkpointing": True,
        "actor_rollout_ref.model.use_remove_padding": True,
        "actor_rollout_ref.actor.use_dynamic_bsz": True,
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": int(v["max_token_len_per_gpu"]),
        "actor_rollout_ref.actor.fsdp_config.param_offload": bool(v["param_offload"]),
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": bool(v["optimizer_offload"]),
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.tensor_model_parallel_size": int(v["rollout_tensor_parallel"]),
        "actor_rollout_ref.rollout.gpu_memory_utilization": float(v["gpu_memory_utilization"]),
        "trainer.n_gpus_per_node": int(job["gpus"]),
        "trainer.nnodes": 1,
        "trainer.device": "cuda",
        "trainer.max_actor_ckpt_to_keep": int(v["max_checkpoints"]),
        "ray_kwargs.ray_init.num_cpus": int(job["gpus"] * job["cpus_per_gpu"]),
    }


def io_overrides(cell, paths, files: VerlRunFiles, *, validate_first: bool, record_pass_rates: bool) -> dict:
    """Where verl reads and writes: the split files, the model, the run folder."""
    return {
        "data.train_files": str(Path(paths.train_file).resolve()),
        "data.val_files": str(Path(paths.val_file).resolve()),
        "actor_rollout_ref.model.path": model_arg(paths.model),
        "reward.custom_reward_function.path": str(reward_function_path()),
        "reward.custom_reward_function.name": REWARD_FUNCTION_NAME,
        "trainer.project_name": "isocompute",
        "trainer.experiment_name": experiment_name(files.run_dir, cell),
        "trainer.logger": ["console", "file"],
        "trainer.log_val_generations": 0,
        "trainer.validation_data_dir": str(files.generations),
        "trainer.rollout_data_dir": str(files.rollouts) if record_pass_rates else None,
        "trainer.default_local_dir": str(files.checkpoints),
        "trainer.resume_mode": "auto",
        # Step 0 is evaluated once; a resumed session starts after a step that
        # was already evaluated (save_freq == test_freq), unless that dump is lost.
        "trainer.val_before_train": bool(validate_first),
        "hydra.run.dir": str(files.session_dir / "hydra"),
    }


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")


def model_arg(model: str) -> str:
    """A local model directory as an absolute path (even before the pipeline has built it);
    a Hugging Face hub id ('org/name', not a local path) as it is."""
    path = Path(model)
    if path.exists() or not _HUB_ID.match(str(model)):
        return str(path.resolve())
    return str(model)


def experiment_name(run_dir: Path, cell) -> str:
    """'<experiment>-<split>-bp<B_p>_n<n>' from results/<experiment>/runs/<split>/<cell> (for verl's loggers)."""
    parts = Path(run_dir).parts
    prefix = f"{parts[-4]}-" if len(parts) >= 4 and parts[-3] == "runs" else ""
    return f"{prefix}{cell.split}-{cell.name}"


def verl_overrides(cfg: dict, cell, paths, *, validate_first: bool = True) -> list[str]:
    """All `key=value` Hydra overrides of one run, recipe first, then `cluster.verl.extra_overrides`."""
    check_supported(cfg)
    files = VerlRunFiles(Path(paths.run_dir).resolve())
    merged = {**recipe_overrides(cfg, cell), **engineering_overrides(cfg),
              **io_overrides(cell, paths, files, validate_first=validate_first,
                             record_pass_rates=cfg["cluster"]["verl"]["train_pass_rates"])}
    out = [f"{key}={hydra_value(value)}" for key, value in merged.items()]
    return out + list(cfg["cluster"]["verl"]["extra_overrides"])


@dataclass(frozen=True)
class VerlCommand:
    argv: list[str]
    env: dict = field(default_factory=dict)

    def shell(self) -> str:
        """The command line as one shell string (environment assignments first)."""
        prefix = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return " ".join(prefix + [shlex.join(self.argv)])


def verl_command(cfg: dict, cell, paths, *, python: str | None = None) -> VerlCommand:
    """The exact training command of a cell in the run folder's current state (resumes if it can)."""
    files = VerlRunFiles(Path(paths.run_dir).resolve())
    state = resume_state(files)
    overrides = verl_overrides(cfg, cell, paths, validate_first=state.validate_first)
    argv = [python or sys.executable, "-m", VERL_ENTRY, *overrides]
    return VerlCommand(argv, {FILE_LOGGER_ENV: str(files.session_metrics)})


# --- resuming ------------------------------------------------------------------------

@dataclass(frozen=True)
class ResumeState:
    step: int | None          # last complete checkpoint, None for a fresh start
    validate_first: bool      # run verl's val_before_train


def read_jsonl(path: Path) -> list[dict]:
    """Records of a JSONL file; a torn last line (a killed writer) is dropped."""
    if not Path(path).is_file():
        return []
    out = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def dump_is_complete(path: Path) -> bool:
    """A validation dump verl finished writing: every line is a JSON object."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with open(path) as fh:
        for line in fh:
            try:
                if not isinstance(json.loads(line), dict):
                    return False
            except json.JSONDecodeError:
                return False
    return True


def resume_state(files: VerlRunFiles) -> ResumeState:
    step = latest_checkpoint_step(files.checkpoints)
    if step is None:
        return ResumeState(None, True)
    evaluated = dump_is_complete(files.generations / f"{step}.jsonl") and any(
        int(r.get("step", -1)) == step for r in read_jsonl(files.metrics))
    return ResumeState(step, not evaluated)


def merge_metrics(previous: list[dict], session: list[dict], resume_step: int | None) -> list[dict]:
    """One record per step: earlier sessions' records up to the resume step, then this session's.

    A resumed session re-runs the steps after its checkpoint, so earlier
    records beyond it are replaced; records of the same step are merged
    (earlier keys kept, this session's added).
    """
    by_step: dict[int, dict] = {}
    for rec in previous:
        step = int(rec["step"])
        if resume_step is not None and step <= resume_step:
            by_step.setdefault(step, {}).update(rec.get("data", {}))
    for rec in session:
        step = int(rec["step"])
        data = rec.get("data", {})
        if step in by_step:
            by_step[step] = {**data, **by_step[step]}
        else:
            by_step[step] = dict(data)
    return [{"step": s, "data": by_step[s]} for s in sorted(by_step)]


def write_jsonl_atomic(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    tmp.replace(path)


def prepare_run_dir(files: VerlRunFiles, identity: dict, max_steps: int | None = None) -> ResumeState:
    """Make the run folder ready for a verl session and say how it resumes.

    A folder trained with another recipe, or beyond this run's M_max (a lowered
    budget), starts over; otherwise logs beyond the last checkpoint are dropped
    (verl redoes those steps), and the metrics of the previous session are
    folded into metrics.jsonl.
    """
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]
    stamp = files.checkpoints / IDENTITY_FILE
    other_recipe = stamp.is_file() and json.loads(stamp.read_text()).get("hash") != digest
    last = latest_checkpoint_step(files.checkpoints)
    beyond = max_steps is not None and last is not None and last > max_steps
    if other_recipe or beyond:
        log.warning("%s: %s; starting the run over", files.run_dir,
                    "trained with another config" if other_recipe else f"checkpoint {last} is beyond M_max")
        for p in (files.checkpoints, files.generations, files.session_dir):
            shutil.rmtree(p, ignore_errors=True)
        files.metrics.unlink(missing_ok=True)
        files.pass_rates.unlink(missing_ok=True)
    files.checkpoints.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"hash": digest, "identity": identity}, indent=2, sort_keys=True, default=str))
    # Fold a killed session's log into metrics.jsonl before verl truncates it.
    step = latest_checkpoint_step(files.checkpoints)
    previous = merge_metrics(read_jsonl(files.metrics), read_jsonl(files.session_metrics), sys.maxsize)
    if step is None:
        shutil.rmtree(files.generations, ignore_errors=True)
        files.metrics.unlink(missing_ok=True)
        files.pass_rates.unlink(missing_ok=True)
    else:
        write_jsonl_atomic(files.metrics, [r for r in previous if int(r["step"]) <= step])
        write_jsonl_atomic(files.pass_rates, [r for r in read_jsonl(files.pass_rates) if int(r["step"]) <= step])
        for dump in files.generations.glob("*.jsonl") if files.generations.is_dir() else []:
            if dump.stem.isdigit() and (int(dump.stem) > step or not dump_is_complete(dump)):
                dump.unlink()
    files.session_metrics.unlink(missing_ok=True)
    # Rollout dumps a killed session left unread: keep the complete ones up to the
    # checkpoint (the next step's file exists) for the recorder, drop the rest.
    dumps = {p: int(p.stem) if p.stem.isdigit() else -1
             for p in (files.rollouts.glob("*.jsonl") if files.rollouts.is_dir() else [])}
    present = set(dumps.values())
    for dump, s in dumps.items():
        if step is None or s > step or s + 1 not in present:
            dump.unlink()
    files.session_dir.mkdir(parents=True, exist_ok=True)
    return resume_state(files)


# --- validation dumps in the project's format -------------------------------------------

def annotate_dump(records: list[dict], count_tokens=None) -> list[dict]:
    """Add `sample` (index of the completion within its problem, in dump order) and,
    with a token counter, `n_tokens`; verl's own keys are left as they are.

    verl dumps the samples of one prompt next to each other (sorted by uid);
    problems are keyed by `problem_id` from the reward function, else the input text.
    """
    seen: dict[str, int] = {}
    out = []
    for rec in records:
        key = rec.get("problem_id") or rec.get("input", "")
        rec = dict(rec)
        rec["sample"] = seen.get(key, 0)
        seen[key] = rec["sample"] + 1
        if count_tokens is not None and "n_tokens" not in rec:
            rec["n_tokens"] = int(count_tokens(rec.get("output") or ""))
        out.append(rec)
    return out


def annotate_dumps(generations: Path, model: str) -> int:
    """Annotate every dump of a run that lacks `sample`; returns the files rewritten."""
    todo = []
    for path in sorted(Path(generations).glob("*.jsonl")):
        records = read_jsonl(path)
        if records and "sample" not in records[0]:
            todo.append((path, records))
    if not todo:
        return 0
    count = _token_counter(model)
    for path, records in todo:
        write_jsonl_atomic(path, annotate_dump(records, count))
    return len(todo)


def _token_counter(model: str):
    """Completion length in tokens, re-tokenised from the decoded text (verl dumps text only);
    exact up to the stop token, which decoding drops."""
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model)
    except Exception as exc:  # the dumps stay valid without n_tokens
        log.warning("cannot load the tokenizer of %s (%s); dumps get no n_tokens", model, exc)
        return None
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"])


# --- training pass rates from verl's rollout dumps ------------------------------------------

def prompt_group(uid: str) -> str:
    """The prompt of a rollout from verl's dump key '{prompt uid}_{session}_{output}'."""
    parts = str(uid).rsplit("_", 2)
    return parts[0] if len(parts) == 3 else str(uid)


def step_pass_rates(records, problem_of) -> list[dict]:
    """{'step', 'problem_id', 'pass_rate'} per prompt of one rollout dump (the local backend's records).

    `problem_of(input_text)` names a prompt's problem; a prompt it does not know
    is named by a digest of its text, so its pass rate still counts.
    """
    groups: dict[str, list] = {}
    step = None
    for rec in records:
        step = int(rec["step"])
        groups.setdefault(prompt_group(rec.get("uid", rec.get("input", ""))), []).append(rec)
    out = []
    for recs in groups.values():
        text = recs[0].get("input", "")
        pid = problem_of(text) or "input-" + hashlib.sha256(text.encode()).hexdigest()[:16]
        out.append({"step": step, "problem_id": pid,
                    "pass_rate": float(sum(float(r["score"]) > 0.5 for r in recs) / len(recs))})
    return sorted(out, key=lambda r: r["problem_id"])


def prompt_index(train_file: Path, model: str) -> dict:
    """Input text -> problem_id for a split, rendered as verl renders and dumps prompts
    (chat template with the generation prompt, decoded without special tokens)."""
    import pandas as pd
    from transformers import AutoTokenizer
    from verl.utils.tokenizer.chat_template import apply_chat_template
    from verl.utils.tokenizer.tokenizer import normalize_token_ids

    tok = AutoTokenizer.from_pretrained(model)
    df = pd.read_parquet(train_file, columns=["prompt", "extra_info"])
    index = {}
    for messages, extra in zip(df["prompt"], df["extra_info"]):
        ids = normalize_token_ids(apply_chat_template(tok, [dict(m) for m in messages], tokenize=True,
                                                      add_generation_prompt=True))
        index[tok.decode(ids, skip_special_tokens=True)] = str(extra["problem_id"])
    return index


class PassRateRecorder:
    """Turns verl's per-step rollout dumps into train_pass_rates.jsonl while verl runs.

    verl writes the dumps one after the other from a single thread, so a step's
    file is complete once the next one exists (or verl has exited); each is
    deleted once read, so at most two steps of rollouts are on disk.
    """

    def __init__(self, files: VerlRunFiles, problem_of):
        self.files = files
        self.problem_of = problem_of

    def collect(self, final: bool = False) -> int:
        if not self.files.rollouts.is_dir():
            return 0
        dumps = sorted((p for p in self.files.rollouts.glob("*.jsonl") if p.stem.isdigit()), key=lambda p: int(p.stem))
        ready = dumps if final else dumps[:-1]
        for path in ready:
            records = read_jsonl(path)
            if records:
                with open(self.files.pass_rates, "a") as fh:
                    for rec in step_pass_rates(records, self.problem_of):
                        fh.write(json.dumps(rec) + "\n")
            path.unlink()
        return len(ready)


def _problem_lookup(train_file: Path, model: str):
    """problem_of(input text) for the recorder; without a tokenizer, every prompt gets a digest."""
    try:
        index = prompt_index(train_file, model)
    except Exception as exc:  # pass rates stay usable for distributions without ids
        log.warning("cannot render %s's prompts with %s's tokenizer (%s); pass rates keyed by prompt digest",
                    train_file, model, exc)
        index = {}
    return index.get


# --- the backend entry point ---------------------------------------------------------------

def run_identity(cfg: dict, cell, paths) -> dict:
    """What a run's checkpoints depend on (the recipe, the data, the model, the engine); not M_max."""
    from isocompute.train.identity import training_identity

    return training_identity(cfg, cell, paths, backend="verl",
                             verl={k: v for k, v in cfg["cluster"]["verl"].items() if k != "max_checkpoints"},
                             gpus=cfg["cluster"]["train"]["gpus"])


def check_split_size(train_file: Path, B_p: int) -> int:
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(train_file).metadata.num_rows
    if rows < B_p:
        raise InputError(f"{train_file}: {rows} training problems, fewer than B_p = {B_p} "
                         "(verl drops incomplete batches, so no step could run); shrink the grid's B_p")
    return rows


def run_verl(cfg: dict, cell, paths, **hooks) -> dict:
    """Train one cell with verl to M_max steps, resuming from the last checkpoint.

    Returns the run summary that the train stage writes into run.json.
    """
    check_supported(cfg)
    files = VerlRunFiles(Path(paths.run_dir).resolve())
    train_rows = check_split_size(Path(paths.train_file), cell.B_p)
    state = prepare_run_dir(files, run_identity(cfg, cell, paths), cell.M_max)
    command = verl_command(cfg, cell, paths)
    log.info("verl %s bp%d_n%d: %s from step %s\n%s", cell.split, cell.B_p, cell.n,
             "resuming" if state.step is not None else "starting", state.step or 0, command.shell())
    (files.session_dir / "command.sh").write_text(command.shell() + "\n")
    env = {**os.environ, **command.env}
    recorder = None
    if cfg["cluster"]["verl"]["train_pass_rates"]:
        recorder = PassRateRecorder(files, _problem_lookup(Path(paths.train_file), paths.model))
    with open(files.session_log, "ab") as out:
        proc = subprocess.Popen(command.argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                cwd=str(files.session_dir))
        while True:
            try:
                proc.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                if recorder is not None:
                    recorder.collect()
    if recorder is not None:
        # After a crash the newest dump may be half-written: it is left for the next session.
        recorder.collect(final=proc.returncode == 0)
    merged = merge_metrics(read_jsonl(files.metrics), read_jsonl(files.session_metrics), state.step)
    write_jsonl_atomic(files.metrics, merged)
    files.session_metrics.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise RuntimeError(f"verl exited with status {proc.returncode} (log: {files.session_log}); "
                           "re-running the rule resumes from the last checkpoint")
    missing = [s for s in evaluation_steps(cell.M_max, cfg["train"]["eval_interval"])
               if not dump_is_complete(files.generations / f"{s}.jsonl")]
    last = latest_checkpoint_step(files.checkpoints)
    if last != cell.M_max or missing:
        raise RuntimeError(f"verl finished without reaching M_max = {cell.M_max} (last checkpoint {last}, "
                           f"missing validation dumps for steps {missing[:5]}); see {files.session_log}")
    annotated = annotate_dumps(files.generations, paths.model)
    return {"steps": cell.M_max, "train_problems": train_rows, "resumed_from": state.step,
            "verl_command": command.shell(), "dumps_annotated": annotated}
