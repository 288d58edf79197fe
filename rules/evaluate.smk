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
    resources:
        **cpu_resources(),
    params:
        cfg=params_json("eval"),
        grader=grader_version(),
        run_dir=run_dir_of,
        replicate=replicate_index,
    shell:
        "isocompute score --params {params.cfg:q} --split {wildcards.split} --bp {wildcards.B_p}"
        " --n {wildcards.n} --replicate {params.replicate} --run-dir {params.run_dir} --out {output} > {log} 2>&1"


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
    resources:
        **cpu_resources(),
    params:
        cfg=params_json("eval"),
        grader=grader_version(),
        run_dir=run_dir_of,
        replicate=replicate_index,
    shell:
        "isocompute score --params {params.cfg:q} --split {wildcards.split} --bp {wildcards.B_p}"
        " --n {wildcards.n} --replicate {params.replicate} --run-dir {params.run_dir}"
        " --eval-set {wildcards.eval_set} --out {output} > {log} 2>&1"
