# The adaptive sweep (sweep.mode: adaptive, issue 13): every cell trains to rung 0,
# C_max / eta^(rungs - 1); at each rung below the last, a decision on the split's
# evaluations up to the rung (isocompute.analysis.adaptive.decide) lets some cells go
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
    threads: train_threads()
    resources:
        **train_resources(),
    params:
        cfg=train_params_json(),
        model=model_arg,
        run_dir=run_dir_of,
        max_steps=max_steps_of,
        stop=rung_stop_step,
        replicate=replicate_index,
        options=grid_train_args,
    shell:
        "isocompute train --params {params.cfg:q} {params.options} --split {wildcards.split} --bp {wildcards.B_p}"
        " --n {wildcards.n} --max-steps {params.max_steps} --rung {wildcards.rung} --stop-at-step {params.stop}"
        " --train-file {input.train} --val-file {input.val} --replicate {params.replicate} --model {params.model}"
        " --run-dir {params.run_dir} --threads {threads} > {log} 2>&1"


rule score_rung:
    input:
        marker=RUNG_MARKER,
    output:
        RUNG_EVALS,
    log:
        LAYOUT.log(f"score/{CELL_NAME}.rung{{rung}}"),
    conda:
        ANALYSIS_ENV
    resources:
        **cpu_resources(),
    params:
        cfg=params_json("eval"),
        grader=grader_version(),
        run_dir=run_dir_of,
        replicate=replicate_index,
        stop=rung_stop_step,
    shell:
        "isocompute score --params {params.cfg:q} --split {wildcards.split} --bp {wildcards.B_p}"
        " --n {wildcards.n} --replicate {params.replicate} --run-dir {params.run_dir} --max-step {params.stop}"
        " --out {output} > {log} 2>&1"


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
    params:
        cfg=decide_params_json(),
        rung_compute=rung_compute_of,
        c_max=c_max_of,
    shell:
        "isocompute adaptive-decide --params {params.cfg:q} --trained {input.trained} --stopped {input.stopped}"
        " --rung {wildcards.rung} --rung-compute {params.rung_compute} --c-max {params.c_max}"
        " --out {output.decisions} --out-evals {output.evals} > {log} 2>&1"
