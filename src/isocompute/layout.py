"""The results layout: every path the pipeline writes or reads, in one place.

    results/{experiment}/
      data/pool.parquet, data/difficulty.parquet          problem pool, avg@16 counts
      data/difficulty/part{part}.parquet                  the counts of one difficulty_chunk job
      model/base/                                         the embedded base model (HF directory)
      splits/{split}/{train,val}.parquet, splits/splits.json
      figures/fig2_difficulty.{png,pdf,counts.csv}
      figure_index.html                                   docs/figures.md for the report
      report/headline{,_brief}.html, report/tables/{split}/  the report's first page, tables as HTML
      runs/{split}/bp{B_p}_n{n}/                          one training run (RunFiles below)
      runs/{split}/bp{B_p}_n{n}/rungs/{rung}/             the run trained to a rung of an adaptive sweep (RungFiles)
      sweep/{split}/rung{rung}/{decisions.csv,evals.parquet}  an adaptive sweep's decision at a rung, and what it saw
      runs/options.json                                   train jobs' settings outside their params
      tracking/                                           experiment trackers' files (config tracking; off by default)
      models/{split}/bp{B_p}_n{n}/                        a verl run merged to Hugging Face format (on request)
      analysis/{split}/{evals,train_pass_rates}.parquet, tables/, figures/
      variants/{variant}/runs/{split}/bp{B_p}_n{n}/       one run of a recipe variant (RunFiles below)
      variants/grid_check.json, curves.parquet, figures/  the variants' cells checked, their curves, Figs. 3, 4, ...
      compare/{name}.{png,pdf}                            studies side by side (config `compare`: Figs. 12, 13)
      cross_eval/evals.parquet, cross_eval/figures/       every run on every evaluation set (eval.extra_sets: Fig. 14)
      logs/..., benchmarks/...                            one per rule and job

rules/common.smk, the CLI and both backends build paths only through this
module. Paths are strings relative to the working directory (the repository
root, like Snakemake), so Snakemake wildcards such as "{split}" pass through.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def run_name(B_p, n, replicate_suffix="") -> str:
    """bp{B_p}_n{n}[_s{r}]: a run's name (its folder, the `run` column, logs); seed
    replicates after the first carry their index. Placeholders work too ('{B_p}')."""
    return f"bp{B_p}_n{n}{replicate_suffix}"


def replicate_suffix(replicate: int) -> str:
    """'' for the first seed replicate, '_s<r>' for the others."""
    return f"_s{replicate}" if replicate else ""

RESULTS_ROOT = "results"
# The folder of a split's analysis tables, under results/{experiment}/analysis/{split}/.
ANALYSIS_TABLES = "tables"
SPLIT_PARTS = ("train", "val")


@dataclass(frozen=True)
class RunFiles:
    """The files of one run directory that both backends write and that scoring and analysis read:

      generations/{step}.jsonl   validation samples, verl's validation_data_dir dump format
                                 (input, output, gts, score, step) + problem_id, sample, n_tokens
      metrics.jsonl              per step, verl's file-logger envelope {"step": N, "data": {...}}
      train_pass_rates.jsonl     per step and training problem: {"step", "problem_id", "pass_rate"}
      generations/{set}/{step}.jsonl   the same, for each extra evaluation set (config eval.extra_sets)
      train_probe.jsonl          the fixed interference probe at matched compute (local backend)
      run.json                   completion marker, written last (the train rule's output)
      evals.parquet              the evaluation table (the score rule's output)
      eval_sets/{set}.parquet    the evaluation table of an extra evaluation set (rule score_eval_set)
    """
    run_dir: Path

    @property
    def generations(self) -> Path:
        return Path(self.run_dir) / "generations"

    def set_generations(self, eval_set: str) -> Path:
        """The validation dumps of an extra evaluation set (a folder below `generations`, so the
        own split's dumps, `generations/{step}.jsonl`, stay where they were)."""
        return self.generations / eval_set

    def set_evals(self, eval_set: str) -> Path:
        return Path(self.run_dir) / "eval_sets" / f"{eval_set}.parquet"

    @property
    def metrics(self) -> Path:
        return Path(self.run_dir) / "metrics.jsonl"

    @property
    def pass_rates(self) -> Path:
        return Path(self.run_dir) / "train_pass_rates.jsonl"

    @property
    def probe(self) -> Path:
        """Per probe step and problem: pass rate of train.probe_samples draws (the Fig. 11 probe)."""
        return Path(self.run_dir) / "train_probe.jsonl"

    @property
    def marker(self) -> Path:
        return Path(self.run_dir) / "run.json"

    @property
    def evals(self) -> Path:
        return Path(self.run_dir) / "evals.parquet"

    def rung(self, rung: int | str) -> RungFiles:
        """The files of this run trained to rung `rung` of an adaptive sweep."""
        return RungFiles(Path(self.run_dir) / "rungs" / str(rung))


@dataclass(frozen=True)
class RungFiles:
    """A run trained to a rung of an adaptive sweep (`sweep.mode: adaptive`), below its M_max:

      rungs/{rung}/rung.json       rung marker, written last (the train_rung rule's output); not
                                   run.json, which marks the full run
      rungs/{rung}/evals.parquet   the run's evaluation table up to the rung's stop step

    The run's own files (checkpoint, logs, dumps) stay in the run directory, two levels up:
    the next rung resumes them.
    """
    rung_dir: Path

    @property
    def run_dir(self) -> Path:
        return Path(self.rung_dir).parents[1]

    @property
    def marker(self) -> Path:
        return Path(self.rung_dir) / "rung.json"

    @property
    def evals(self) -> Path:
        return Path(self.rung_dir) / "evals.parquet"


@dataclass(frozen=True)
class RunPaths(RunFiles):
    """A run's files and its inputs: what a training backend is handed. `eval_sets`: the extra
    evaluation sets as (name, problem file) pairs (isocompute.data.eval_sets)."""
    train_file: Path
    val_file: Path
    model: str
    eval_sets: tuple = ()


@dataclass(frozen=True)
class StudyLayout:
    """The paths of one experiment's results."""
    experiment: str
    root: str = RESULTS_ROOT

    @property
    def results(self) -> str:
        return f"{self.root}/{self.experiment}"

    # --- data stages ---------------------------------------------------------
    @property
    def pool(self) -> str:
        return f"{self.results}/data/pool.parquet"

    @property
    def difficulty(self) -> str:
        return f"{self.results}/data/difficulty.parquet"

    def difficulty_part(self, part) -> str:
        """The counts of one difficulty_chunk job ("{part}" passes through as a wildcard)."""
        part = part if isinstance(part, str) else f"{int(part):03d}"
        return f"{self.results}/data/difficulty/part{part}.parquet"

    @property
    def embedded_model(self) -> str:
        return f"{self.results}/model/base"

    @property
    def splits_dir(self) -> str:
        return f"{self.results}/splits"

    def split_file(self, split: str, part: str) -> str:
        return f"{self.splits_dir}/{split}/{part}.parquet"

    def split_files(self, split: str) -> dict[str, str]:
        return {part: self.split_file(split, part) for part in SPLIT_PARTS}

    def eval_set_file(self, spec: dict) -> str:
        """The problem file of an extra evaluation set (an `eval.extra_sets` entry): its split's
        val.parquet, or its path."""
        return self.split_file(spec["split"], "val") if spec.get("split") else spec["path"]

    def eval_set_files(self, cfg: dict, split: str | None = None) -> tuple:
        """(name, problem file) of each of the config's extra evaluation sets, in order; given the
        run's `split`, less a set of that split (the run's own validation set already)."""
        return tuple((s["name"], self.eval_set_file(s)) for s in cfg["eval"].get("extra_sets", [])
                     if split is None or s.get("split") != split)

    @property
    def splits_summary(self) -> str:
        return f"{self.splits_dir}/splits.json"

    @property
    def grid_check(self) -> str:
        """The grid checked against the split sizes (every split has its largest B_p of problems)."""
        return f"{self.splits_dir}/grid_check.json"

    @property
    def fig_difficulty_stem(self) -> str:
        return f"{self.results}/figures/fig2_difficulty"

    @property
    def figure_index(self) -> str:
        """docs/figures.md (which config, rule and file give each paper figure) as HTML for the report."""
        return f"{self.results}/figure_index.html"

    @property
    def headline(self) -> str:
        """The report's first page: per split, what may be said of n* and what to train."""
        return f"{self.results}/report/headline.html"

    @property
    def headline_brief(self) -> str:
        """The headline's short form, no page around it: the report's landing page embeds it (workflow.rst)."""
        return f"{self.results}/report/headline_brief.html"

    @property
    def report_tables(self) -> str:
        """{split}/{summary,recommendations}.html: the analysis tables the report shows, as HTML."""
        return f"{self.results}/report/tables"

    # --- training and scoring --------------------------------------------------
    run_name = staticmethod(run_name)

    def run_dir(self, split, B_p, n, replicate_suffix="") -> str:
        """results/{experiment}/runs/{split}/bp{B_p}_n{n}[_s{r}]: one training run's directory
        (seed replicates after the first carry their index)."""
        return f"{self.results}/runs/{split}/{run_name(B_p, n, replicate_suffix)}"

    def run_files(self, split, B_p, n, replicate_suffix="") -> RunFiles:
        return RunFiles(Path(self.run_dir(split, B_p, n, replicate_suffix)))

    def cell_files(self, cell) -> RunFiles:
        """The run files of a grid cell or a variant's cell (isocompute.grid.Cell)."""
        if getattr(cell, "variant", ""):
            return self.variant_run_files(cell.variant, cell.split, cell.B_p, cell.n)
        return self.run_files(cell.split, cell.B_p, cell.n, cell.replicate_suffix)

    def rung_files(self, split, B_p, n, replicate_suffix="", rung="{rung}") -> RungFiles:
        """A run's files at a rung of an adaptive sweep."""
        return self.run_files(split, B_p, n, replicate_suffix).rung(rung)

    def cell_rung_files(self, cell, rung) -> RungFiles:
        return self.cell_files(cell).rung(rung)

    def merged_model(self, split, B_p, n, replicate_suffix="") -> str:
        """A finished verl run's last checkpoint as a Hugging Face model directory."""
        return f"{self.results}/models/{split}/{run_name(B_p, n, replicate_suffix)}"

    @property
    def train_options(self) -> str:
        """What the train jobs read besides their params (CPUs, checkpoint retention)."""
        return f"{self.results}/runs/options.json"

    @property
    def tracking(self) -> str:
        """Where the experiment trackers write when `tracking.dir` is not set (config tracking)."""
        return f"{self.results}/tracking"

    # --- recipe variants: their runs apart from the grid's, one folder per variant ----
    @property
    def variants_dir(self) -> str:
        return f"{self.results}/variants"

    def variant_run_dir(self, variant, split, B_p, n) -> str:
        """results/{experiment}/variants/{variant}/runs/{split}/bp{B_p}_n{n}: one run of a variant."""
        return f"{self.variants_dir}/{variant}/runs/{split}/{run_name(B_p, n)}"

    def variant_run_files(self, variant, split, B_p, n) -> RunFiles:
        return RunFiles(Path(self.variant_run_dir(variant, split, B_p, n)))

    @property
    def variants_grid_check(self) -> str:
        """The variants' cells checked against the split sizes."""
        return f"{self.variants_dir}/grid_check.json"

    @property
    def variant_curves(self) -> str:
        """Every variant run's training metrics and evaluations against steps."""
        return f"{self.variants_dir}/curves.parquet"

    @property
    def variant_figures(self) -> str:
        return f"{self.variants_dir}/figures"

    # --- adaptive sweep ----------------------------------------------------------
    def sweep_dir(self, split, rung) -> str:
        return f"{self.results}/sweep/{split}/rung{rung}"

    def sweep_decisions(self, split, rung) -> str:
        """One row per run of the split: whether it continues past the rung, and why."""
        return f"{self.sweep_dir(split, rung)}/decisions.csv"

    def sweep_evals(self, split, rung) -> str:
        """The split's evaluations the decision at the rung saw (each run's up to the rung)."""
        return f"{self.sweep_dir(split, rung)}/evals.parquet"

    # --- analysis ----------------------------------------------------------------
    def analysis_dir(self, split) -> str:
        return f"{self.results}/analysis/{split}"

    def analysis_evals(self, split) -> str:
        return f"{self.analysis_dir(split)}/evals.parquet"

    def analysis_train(self, split) -> str:
        return f"{self.analysis_dir(split)}/train_pass_rates.parquet"

    def analysis_tables(self, split) -> str:
        return f"{self.analysis_dir(split)}/{ANALYSIS_TABLES}"

    def analysis_figures(self, split) -> str:
        return f"{self.analysis_dir(split)}/figures"

    # --- cross-evaluation: every run on every evaluation set (config eval.extra_sets) ---
    @property
    def cross_eval_table(self) -> str:
        """Every grid run's evaluations on its own split and on each extra evaluation set."""
        return f"{self.results}/cross_eval/evals.parquet"

    @property
    def cross_eval_figures(self) -> str:
        """Fig. 14 (fig14_cross_eval) and the out-of-domain curves (appendix_out_of_domain)."""
        return f"{self.results}/cross_eval/figures"

    # --- studies side by side (config `compare`) -----------------------------------
    def compare_stem(self, name) -> str:
        """The figure of comparison `name`, without its extension (.png, .pdf)."""
        return f"{self.results}/compare/{name}"

    # --- logs and benchmarks, one per rule (and job) ------------------------------
    def log(self, name: str) -> str:
        return f"{self.results}/logs/{name}.log"

    def benchmark(self, name: str) -> str:
        return f"{self.results}/benchmarks/{name}.tsv"


def study_layout(cfg: dict, root: str = RESULTS_ROOT) -> StudyLayout:
    return StudyLayout(cfg["experiment"], root)


def base_model_path(cfg: dict, root: str = RESULTS_ROOT) -> str:
    """The model runs train from: the pipeline-built embedded model, or base_model.path."""
    if cfg["base_model"]["source"] == "embedded":
        return study_layout(cfg, root).embedded_model
    return cfg["base_model"]["path"]


def run_paths(cfg: dict, cell, root: str = RESULTS_ROOT) -> RunPaths:
    """The RunPaths the train rule passes for a cell."""
    layout = study_layout(cfg, root)
    files = layout.split_files(cell.split)
    return RunPaths(layout.cell_files(cell).run_dir, Path(files["train"]), Path(files["val"]),
                    base_model_path(cfg, root), layout.eval_set_files(cfg, cell.split))
