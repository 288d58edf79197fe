# Recipe variants (config `variants`): their cells, paths and the named input and
# params functions of rules/variants.smk. A variant's runs train with the study's
# recipe plus its train overrides (`variant_config`), so its recipe is its train jobs'
# params: a changed variant re-runs only its own runs.

from isocompute.grid import variant_cells

VARIANT_CELLS = variant_cells(config)  # checked with the grid (check_study, common.smk)
VARIANT_SPLITS = sorted({c.split for c in VARIANT_CELLS})


wildcard_constraints:
    variant="|".join(sorted(config["variants"])) or "none",


VARIANT_FILES = LAYOUT.variant_run_files("{variant}", "{split}", "{B_p}", "{n}")
VARIANT_RUN = f"variants/{{variant}}/{{split}}/{LAYOUT.run_name('{B_p}', '{n}')}"


# Cheap, like their grid counterparts: where Snakemake runs, not cluster jobs.
localrules:
    check_variant_grid,
    collect_variants,
    variant_figures,


def variant_cell_of(wildcards):
    return find_cell(
        VARIANT_CELLS,
        wildcards.split,
        int(wildcards.B_p),
        int(wildcards.n),
        variant=wildcards.variant,
    )


def variant_train_inputs(wildcards):
    """The cell's split files, the variants' check against the split sizes, the base model."""
    variant_cell_of(wildcards)  # an unknown cell stops here with the reason
    return {
        **split_files(wildcards.split),
        "grid_check": ancient(LAYOUT.variants_grid_check),
        "model": base_model_input(),
        "options": ancient(LAYOUT.train_options) if uses_train_options() else [],
    }


def variant_train_params(wildcards):
    """The train rule's params with the variant's recipe: the variant's rerun contract."""
    return jobs.as_json(jobs.train_params(config, variant_cell_of(wildcards)))


def variant_train_args(wildcards, input):
    return jobs.train_args(variant_cell_of(wildcards), options=options_of(input))


def variant_score_args(wildcards):
    return jobs.score_args(variant_cell_of(wildcards))


def variant_run_dir(wildcards):
    return str(variant_cell_files(wildcards).run_dir)


def variant_cell_files(wildcards):
    return LAYOUT.cell_files(variant_cell_of(wildcards))


def variant_split_train_files():
    return {split: LAYOUT.split_file(split, "train") for split in VARIANT_SPLITS}


def variant_split_file_args(wildcards, input):
    return " ".join(f"{split}={input[split]}" for split in VARIANT_SPLITS)


def variant_check_params():
    """What the variants' size check reads: their cells (C_max may come from the grid), not
    their recipes or labels."""
    return jobs.as_json(jobs.variant_check_params(config))


def variant_eval_tables():
    return [str(LAYOUT.cell_files(c).evals) for c in VARIANT_CELLS]


def variant_run_dirs():
    return [str(LAYOUT.cell_files(c).run_dir) for c in VARIANT_CELLS]


def variant_figure_params():
    """What the figures read: which variant each figure draws, their labels, eval.k."""
    return jobs.as_json(jobs.variant_figure_params(config))


def variant_targets():
    if not VARIANT_CELLS:
        return []
    return variant_eval_tables() + [LAYOUT.variant_figures]
