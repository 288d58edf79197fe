# Training: one GRPO run per (split, B_p, n) grid cell. The run directory holds
# resumable state (checkpoint, logs, validation dumps); only the completion
# marker run.json is declared, so a failed job keeps what it had done.


rule train:
    input:
        unpack(train_inputs),
    output:
        f"{RESULTS}/runs/{{split}}/bp{{B_p}}_n{{n}}/run.json",
    params:
        cfg=train_params_json(),
        model=base_model_path(),
        run_dir=run_dir_of,
        max_steps=max_steps_of,
    threads: config["threads_per_job"]
    resources:
        **train_resources(),
    conda:
        GPU_ENV
    log:
        f"{RESULTS}/logs/train/{{split}}/bp{{B_p}}_n{{n}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{split}}/bp{{B_p}}_n{{n}}.tsv"
    shell:
        "isocompute train --params {params.cfg:q} --split {wildcards.split} --bp {wildcards.B_p}"
        " --n {wildcards.n} --max-steps {params.max_steps} --train-file {input.train} --val-file {input.val}"
        " --model {params.model} --run-dir {params.run_dir} --threads {threads} > {log} 2>&1"
