# Figures of the study (paper Figs. 5-11 and the appendix frontiers), one per
# file, PNG and PDF, declared for `snakemake --report` in the paper's order, each
# with its own caption; the report's headline (what the study found, per split, and
# the analysis tables as HTML); and the figure index (docs/figures.md: which config,
# rule and file give each paper figure) for the report.


rule figures:
    input:
        evals=LAYOUT.analysis_evals("{split}"),
        tables=LAYOUT.analysis_tables("{split}"),
    output:
        report(
            directory(LAYOUT.analysis_figures("{split}")),
            patterns=["{name}.png"],
            caption="../workflow/report/figures.rst",
            category="2. Analysis figures",
            subcategory="{split}",
            labels=figure_labels,
        ),
    log:
        LAYOUT.log("analysis/{split}/figures"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    shell:
        "isocompute figures --evals {input.evals} --tables {input.tables} --out {output} > {log} 2>&1"


# The report opens on the headline: workflow.rst embeds its short form, category 1 lists the page.
rule headline:
    input:
        headline_tables(),
    output:
        page=report(
            LAYOUT.headline,
            caption="../workflow/report/headline.rst",
            category="1. Headline",
        ),
        brief=LAYOUT.headline_brief,
        tables=report(
            directory(LAYOUT.report_tables),
            patterns=["{split}/{table}.html"],
            caption="../workflow/report/recommendations.rst",
            category="3. Analysis tables",
            subcategory="{split}",
            labels={"table": "{table}", "file": "{table}.html"},
        ),
    log:
        LAYOUT.log("report/headline"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        tables=headline_tables_args,
        experiment=config["experiment"],
    shell:
        "isocompute headline {params.tables} --experiment {params.experiment:q} --out {output.page}"
        " --brief {output.brief} --tables-out {output.tables} > {log} 2>&1"


rule figure_index:
    input:
        FIGURE_INDEX_DOC,
    output:
        report(
            LAYOUT.figure_index,
            caption="../workflow/report/figure_index.rst",
            category="8. Figure index",
        ),
    log:
        LAYOUT.log("figure_index"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    shell:
        "isocompute figure-index {input} --out {output} > {log} 2>&1"
