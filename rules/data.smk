# Data stages: problem pool -> base model -> avg@16 difficulty -> splits -> Fig. 2.


rule pool:
    output:
        LAYOUT.pool,
    log:
        LAYOUT.log("pool"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    resources:
        **cpu_resources(),
    params:
        cfg=params_json("pool"),
    shell:
        "isocompute pool --params {params.cfg:q} --out {output} > {log} 2>&1"


rule base_model:
    input:
        pool=LAYOUT.pool,
    output:
        directory(LAYOUT.embedded_model),
    log:
        LAYOUT.log("base_model"),
    benchmark:
        LAYOUT.benchmark("base_model")
    conda:
        GPU_ENV
    container:
        CONTAINER
    threads: config["base_model"]["pretrain_threads"]
    resources:
        **cpu_resources(),
    params:
        cfg=params_json("pool", "base_model"),
    shell:
        "isocompute base-model --params {params.cfg:q} --pool {input.pool} --out {output} > {log} 2>&1"


# avg@16 of the pool, split into cluster.sample.jobs parallel jobs of whole chunks
# (resumable per chunk), then merged in pool order.
rule difficulty_chunk:
    input:
        pool=LAYOUT.pool,
        model=base_model_input(),
    output:
        LAYOUT.difficulty_part("{part}"),
    log:
        LAYOUT.log("difficulty/part{part}"),
    benchmark:
        LAYOUT.benchmark("difficulty/part{part}")
    conda:
        GPU_ENV
    container:
        CONTAINER
    threads: sampling_threads()
    resources:
        **sampling_resources(),
    params:
        cfg=difficulty_params_json(),
        model=model_arg,
        parts=difficulty_jobs(),
    shell:
        "isocompute difficulty --params {params.cfg:q} --pool {input.pool} --model {params.model}"
        " --part {wildcards.part} --parts {params.parts} --threads {threads} --out {output} > {log} 2>&1"


rule difficulty:
    input:
        pool=LAYOUT.pool,
        parts=difficulty_part_files(),
    output:
        LAYOUT.difficulty,
    log:
        LAYOUT.log("difficulty"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    resources:
        **cpu_resources(),
    params:
        cfg=params_json("difficulty"),
    shell:
        "isocompute difficulty-merge --params {params.cfg:q} --pool {input.pool} --parts {input.parts}"
        " --out {output} > {log} 2>&1"


rule splits:
    input:
        pool=LAYOUT.pool,
        difficulty=LAYOUT.difficulty,
    output:
        all_split_files(),
        summary=LAYOUT.splits_summary,
    log:
        LAYOUT.log("splits"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    resources:
        **cpu_resources(),
    params:
        cfg=params_json("splits"),
        out_dir=output_parent,
    shell:
        "isocompute splits --params {params.cfg:q} --pool {input.pool} --difficulty {input.difficulty}"
        " --out-dir {params.out_dir} > {log} 2>&1"


rule fig_difficulty:
    input:
        difficulty=LAYOUT.difficulty,
        splits=all_split_files(),
    output:
        png=report(
            f"{LAYOUT.fig_difficulty_stem}.png",
            caption="../workflow/report/fig2.rst",
            category="4. Data",
            subcategory="Difficulty",
        ),
        pdf=f"{LAYOUT.fig_difficulty_stem}.pdf",
        counts=f"{LAYOUT.fig_difficulty_stem}.counts.csv",
    log:
        LAYOUT.log("fig_difficulty"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        cfg=params_json("splits", "difficulty"),
        splits_dir=splits_dir_of,
        stem=output_stem,
    shell:
        "isocompute fig-difficulty --params {params.cfg:q} --difficulty {input.difficulty}"
        " --splits-dir {params.splits_dir} --out-stem {params.stem} > {log} 2>&1"
