# Training: one GRPO run per (split, B_p, n) grid cell. The run directory holds
# resumable state (checkpoint, logs, validation dumps); only the completion
# marker run.json is declared, so a failed job keeps what it had done.


rule check_grid:
    input:
        **grid_split_train_files(),
    output:
        LAYOUT.grid_check,
    log:
        LAYOUT.log("check_grid"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=grid_check_params_json(),
        files=split_file_args,
    shell:
        "isocompute check-grid --params {params.cfg:q} --train-files {params.files} --out {output} > {log} 2>&1"


# The settings train jobs read that are not their params (experiment tracking, verl's
# CPUs and checkpoint retention): a changed value rewrites this file, which the jobs read
# as an ancient input, so finished runs are not resubmitted and the next attempt of a
# run sees it.
rule train_options:
    output:
        LAYOUT.train_options,
    log:
        LAYOUT.log("train_options"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=train_options_json(),
    shell:
        "isocompute train-options --params {params.cfg:q} --out {output} > {log} 2>&1"


rule train:
    input:
        unpack(train_inputs),
    output:
        RUN_MARKER,
    log:
        LAYOUT.log(f"train/{CELL_NAME}"),
    benchmark:
        LAYOUT.benchmark(f"train/{CELL_NAME}")
    priority: train_priority
    conda:
        GPU_ENV
    container:
        CONTAINER
    threads: train_threads()
    resources:
        **train_resources(),
    params:
        cfg=train_params_of,
        args=train_args_of,
        model=model_arg,
        run_dir=run_dir_of,
    shell:
        jobs.TRAIN_SHELL


# A finished verl run's last checkpoint as a Hugging Face model, on request (not in
# `all`): a cluster job, since the merge holds the whole model in memory.
if config["train"]["backend"] == "verl":

    rule merge_checkpoint:
        input:
            marker=RUN_MARKER,
        output:
            directory(LAYOUT.merged_model("{split}", "{B_p}", "{n}", "{rep}")),
        log:
            LAYOUT.log(f"merge_checkpoint/{CELL_NAME}"),
        conda:
            GPU_ENV
        container:
            CONTAINER
        threads: config["cluster"]["merge"]["threads"]
        resources:
            **merge_resources(),
        params:
            run_dir=run_dir_of,
        shell:
            "isocompute verl-merge --run-dir {params.run_dir} --out {output} > {log} 2>&1"
