rule preprocess:
    """Canonical interactions (every rating of the MNAR and MAR parts), users and items.

    A dataset of the config's own (sources.<name>) reads its ratings/mar files, the inputs:
    editing one reruns that dataset only."""
    input:
        unpack(preprocess_input),
    output:
        interactions=results("data/{dataset}/interactions.parquet"),
        user_index=results("data/{dataset}/users.parquet"),
        item_index=results("data/{dataset}/items.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            synthetic=lambda w: config["synthetic"] if w.dataset == "synthetic" else None,
            semisynthetic=lambda w: (
                config["semisynthetic"] if w.dataset == "ml-100k-semi" else None
            ),
            own=own_dataset,
            code=CODE,
        ),
    threads: resources_of("preprocess")["threads"]
    resources:
        mem_mb=job_mem_mb("preprocess", resources_of("preprocess"), synthetic_input_mb),
        runtime=job_runtime("preprocess", resources_of("preprocess"), synthetic_input_mb),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("data/{dataset}/preprocess.log"),
    benchmark:
        bench("data/{dataset}/preprocess.tsv")
    script:
        "../scripts/preprocess.py"
