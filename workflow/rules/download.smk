localrules:
    download,


rule download:
    """Fetch a dataset's canonical files (local path, mirror or HTTPS), checksum-verified."""
    input:
        obtainable,  # stops the planning of a run that needs a manual-only dataset it lacks
    output:
        directory("resources/raw/{dataset}"),
    wildcard_constraints:
        dataset="|".join(DOWNLOADABLE),
    params:
        **job_params(
            dataset="{dataset}",
            path=lambda w: config["sources"][w.dataset]["path"],
            url=lambda w: config["sources"][w.dataset]["url"],
            mirror=mirror(),
            mirror_origin=mirror_origin(),
            limits=config["download"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("download/{dataset}.tsv")
    log:
        logs("download/{dataset}.log"),
    script:
        "../scripts/download.py"
