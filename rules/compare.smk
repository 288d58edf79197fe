# Studies side by side (config `compare`; paper Figs. 12 and 13): finished
# experiments' analyses drawn in one figure each (isocompute compare); the entries'
# inputs and arguments come from rules/common_compare.smk.


localrules:
    compare,


rule compare:
    input:
        comparison_inputs,
    output:
        png=report(
            f"{LAYOUT.compare_stem('{comparison}')}.png",
            caption="../workflow/report/compare.rst",
            category="7. Studies side by side",
        ),
        pdf=f"{LAYOUT.compare_stem('{comparison}')}.pdf",
    log:
        LAYOUT.log("compare/{comparison}"),
    conda:
        ANALYSIS_ENV
    container:
        CONTAINER
    params:
        args=comparison_args,
        stem=comparison_stem,
    shell:
        "isocompute compare {params.args} --out {params.stem} > {log} 2>&1"
