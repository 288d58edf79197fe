# The adaptive sweep (sweep.mode: adaptive): every cell trains to rung 0,
# C_max / eta^(rungs - 1); at each rung below the last, a decision on the split's
# evaluations up to the rung (isocompute.analysis.adaptive.rule.decide) lets some cells go
# on. Each decision is a checkpoint, so the DAG grows rung by rung and `snakemake -n`
# shows the current rung's jobs. A cell's rungs are prefixes of its one full run
# (same recipe, resumed from its checkpoint); the last rung is the train rule itself.


rule train_rung:
    input:
        unpack(rung_train_inputs),
    output:
        RUNG_MARKER,
    log:
        LAYOUT.log(f"train/{CELL_NAME}.rung{{rung}}"),
    benchmark:
        LAYOUT.benchmark(f"train/{CELL_NAME}.rung{{rung}}")
    conda:
        GPU_ENV
    container:
        CONTAINER
    threads: train_threads()
    resources:
        **train_resources(),
    params:
        cfg=train_params_of,
        args=rung_train_args_of,
        model=model_arg,
        run_dir=run_dir_of,
    shell:
        jobs.TRAIN_SHELL


rule score_rung:
    input:
        marker=RUNG_MARKER,
    output:
        RUNG_EVALS,
    log:
        LAYOUT.log(f"score/{CELL_NAME}.rung{{rung}}"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    resources:
        **cpu_resources(),
    params:
        cfg=score_params_json(),
        grader=grader_version(),
        args=rung_score_args_of,
        run_dir=run_dir_of,
    shell:
        jobs.SCORE_SHELL


checkpoint adaptive_rung:
    input:
        unpack(rung_decision_inputs),
    output:
        decisions=LAYOUT.sweep_decisions("{split}", "{rung}"),
        evals=LAYOUT.sweep_evals("{split}", "{rung}"),
    log:
        LAYOUT.log("sweep/{split}/rung{rung}"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=decide_params_json(),
        rung_compute=rung_compute_of,
        c_max=c_max_of,
    shell:
        "isocompute adaptive-decide --params {params.cfg:q} --trained {input.trained} --stopped {input.stopped}"
        " --rung {wildcards.rung} --rung-compute {params.rung_compute} --c-max {params.c_max}"
        " --out {output.decisions} --out-evals {output.evals} > {log} 2>&1"
