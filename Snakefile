# isocompute: compute-optimal scaling of LLM RL (IsoCompute Playbook).
# This file is the table of contents; stages live in rules/, logic in src/.

from snakemake.utils import min_version

min_version("9.0")


# The embedded default, unless a study config is given with --configfile: that
# one then stands alone (schema defaults fill the rest) instead of being merged
# key by key into the embedded default. Cluster jobs get the same --configfile.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# Validates the config against the schema (filling defaults) before any job.
include: "rules/common.smk"
include: "rules/common_train.smk"
include: "rules/common_sweep.smk"
include: "rules/common_variants.smk"
include: "rules/common_compare.smk"


report: "workflow/report/workflow.rst"


include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/sweep.smk"
include: "rules/evaluate.smk"
include: "rules/analyze.smk"
include: "rules/figures.smk"
include: "rules/variants.smk"
include: "rules/compare.smk"


rule all:
    default_target: True
    input:
        all_targets(),
