# Recipe variants (config `variants`): one study, several recipes. Each variant's runs
# train with the study's recipe plus its train overrides, at the cells it names, in
# their own folders; its recipe is in its train jobs' params (and run identity), so a
# changed variant re-runs only its own runs. Their curves -> Figs. 3, 4, decoupled baseline.


rule check_variant_grid:
    input:
        **variant_split_train_files(),
    output:
        LAYOUT.variants_grid_check,
    log:
        LAYOUT.log("variants/check_grid"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=variant_check_params(),
        files=variant_split_file_args,
    shell:
        "isocompute check-grid --params {params.cfg:q} --train-files {params.files} --out {output} > {log} 2>&1"


rule train_variant:
    input:
        unpack(variant_train_inputs),
    output:
        str(VARIANT_FILES.marker),
    log:
        LAYOUT.log(f"train/{VARIANT_RUN}"),
    benchmark:
        LAYOUT.benchmark(f"train/{VARIANT_RUN}")
    conda:
        GPU_ENV
    container:
        CONTAINER
    threads: train_threads()
    resources:
        **train_resources(),
    params:
        cfg=variant_train_params,
        args=variant_train_args,
        model=model_arg,
        run_dir=variant_run_dir,
    shell:
        jobs.TRAIN_SHELL


rule score_variant:
    input:
        marker=str(VARIANT_FILES.marker),
    output:
        str(VARIANT_FILES.evals),
    log:
        LAYOUT.log(f"score/{VARIANT_RUN}"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    resources:
        **cpu_resources(),
    params:
        cfg=score_params_json(),
        grader=grader_version(),
        args=variant_score_args,
        run_dir=variant_run_dir,
    shell:
        jobs.SCORE_SHELL


rule collect_variants:
    input:
        variant_eval_tables(),
    output:
        LAYOUT.variant_curves,
    log:
        LAYOUT.log("variants/collect"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        runs=variant_run_dirs(),
    shell:
        "isocompute collect-variants {params.runs} --out {output} > {log} 2>&1"


rule variant_figures:
    input:
        curves=LAYOUT.variant_curves,
    output:
        report(
            directory(LAYOUT.variant_figures),
            patterns=["{name}.png"],
            caption="../workflow/report/variants.rst",
            category="6. Recipe variants",
        ),
    log:
        LAYOUT.log("variants/figures"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=variant_figure_params(),
    shell:
        "isocompute variant-figures --params {params.cfg:q} --curves {input.curves} --out {output} > {log} 2>&1"
