# Scoring: a run's raw validation dumps -> its evaluation table (avg/best/worst@k,
# unbiased pass@k/worst@k, compute, tokens). Re-grades with the project grader;
# eval.k and the grader version are params here only, so they never re-train.


rule score:
    input:
        marker=RUN_MARKER,
    output:
        RUN_EVALS,
    log:
        LAYOUT.log(f"score/{CELL_NAME}"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    resources:
        **cpu_resources(),
    params:
        cfg=score_params_json(),
        grader=grader_version(),
        args=score_args_of,
        run_dir=run_dir_of,
    shell:
        jobs.SCORE_SHELL


# An extra evaluation set of a run (config eval.extra_sets), scored like its own split.
rule score_eval_set:
    input:
        marker=RUN_MARKER,
    output:
        RUN_SET_EVALS,
    log:
        LAYOUT.log(f"score/{CELL_NAME}.{{eval_set}}"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    resources:
        **cpu_resources(),
    params:
        cfg=score_params_json(),
        grader=grader_version(),
        args=score_set_args_of,
        run_dir=run_dir_of,
    shell:
        jobs.SCORE_SHELL


# Every grid run on every evaluation set: one table, Fig. 14 (training split x evaluation
# set, small vs large n) and the out-of-domain curves of the sets given by path.
rule cross_eval:
    input:
        own=own_eval_tables(),
        sets=set_eval_tables(),
    output:
        table=LAYOUT.cross_eval_table,
        figures=report(
            directory(LAYOUT.cross_eval_figures),
            patterns=["{name}.png"],
            caption="../workflow/report/figures.rst",
            category="5. Cross-evaluation",
        ),
    log:
        LAYOUT.log("cross_eval"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=cross_eval_params_json(),
    shell:
        "isocompute cross-eval --params {params.cfg:q} --own {input.own} --sets {input.sets}"
        " --out-table {output.table} --figures {output.figures} > {log} 2>&1"
