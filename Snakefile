# isocompute: compute-optimal scaling of LLM RL (IsoCompute Playbook).
# This file is the table of contents; stages live in rules/, logic in src/.

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


include: "rules/common.smk"


validate(config, "config/schema.yaml")


report: "workflow/report/workflow.rst"


include: "rules/data.smk"


rule all:
    input:
        all_targets(),
    default_target: True
