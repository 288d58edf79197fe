# Data stages: problem pool -> base model -> avg@16 difficulty -> splits -> Fig. 2.


rule pool:
    output:
        f"{RESULTS}/data/pool.parquet",
    params:
        cfg=params_json("pool"),
    log:
        f"{RESULTS}/logs/pool.log",
    resources:
        **cpu_resources(),
    conda:
        ANALYSIS_ENV
    shell:
        "isocompute pool --params {params.cfg:q} --out {output} > {log} 2>&1"


rule base_model:
    input:
        pool=f"{RESULTS}/data/pool.parquet",
    output:
        directory(f"{RESULTS}/model/base"),
    params:
        cfg=params_json("pool", "base_model"),
    threads: config["base_model"]["pretrain_threads"]
    resources:
        **cpu_resources(),
    log:
        f"{RESULTS}/logs/base_model.log",
    benchmark:
        f"{RESULTS}/benchmarks/base_model.tsv"
    conda:
        GPU_ENV
    shell:
        "isocompute base-model --params {params.cfg:q} --pool {input.pool} --out {output} > {log} 2>&1"


rule difficulty:
    input:
        pool=f"{RESULTS}/data/pool.parquet",
        model=base_model_input(),
    output:
        f"{RESULTS}/data/difficulty.parquet",
    params:
        cfg=sampler_params_json("sampling", "difficulty"),
        model=base_model_path(),
    threads: sampling_threads()
    resources:
        **sampling_resources(),
    log:
        f"{RESULTS}/logs/difficulty.log",
    benchmark:
        f"{RESULTS}/benchmarks/difficulty.tsv"
    conda:
        GPU_ENV
    shell:
        "isocompute difficulty --params {params.cfg:q} --pool {input.pool} --model {params.model}"
        " --threads {threads} --out {output} > {log} 2>&1"


rule splits:
    input:
        pool=f"{RESULTS}/data/pool.parquet",
        difficulty=f"{RESULTS}/data/difficulty.parquet",
    output:
        all_split_files(),
        summary=f"{RESULTS}/splits/splits.json",
    params:
        cfg=params_json("splits"),
        out_dir=f"{RESULTS}/splits",
    log:
        f"{RESULTS}/logs/splits.log",
    resources:
        **cpu_resources(),
    conda:
        ANALYSIS_ENV
    shell:
        "isocompute splits --params {params.cfg:q} --pool {input.pool} --difficulty {input.difficulty}"
        " --out-dir {params.out_dir} > {log} 2>&1"


rule fig_difficulty:
    input:
        difficulty=f"{RESULTS}/data/difficulty.parquet",
        splits=all_split_files(),
    output:
        png=report(f"{RESULTS}/figures/fig2_difficulty.png", caption="../workflow/report/fig2.rst",
                   category="Data", subcategory="Difficulty"),
        pdf=f"{RESULTS}/figures/fig2_difficulty.pdf",
        counts=f"{RESULTS}/figures/fig2_difficulty.counts.csv",
    params:
        cfg=params_json("splits", "difficulty"),
        splits_dir=f"{RESULTS}/splits",
        stem=f"{RESULTS}/figures/fig2_difficulty",
    log:
        f"{RESULTS}/logs/fig_difficulty.log",
    conda:
        ANALYSIS_ENV
    shell:
        "isocompute fig-difficulty --params {params.cfg:q} --difficulty {input.difficulty}"
        " --splits-dir {params.splits_dir} --out-stem {params.stem} > {log} 2>&1"
