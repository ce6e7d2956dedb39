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
            generator=lambda w: generator_of(w.dataset),
            semisynthetic=lambda w: (
                config["semisynthetic"] if w.dataset == "ml-100k-semi" else None
            ),
            own=own_dataset,
            code=CODE["preprocess"],
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


# One seed's own draw of a dataset drawn per seed (synthetic.per_seed, semireal.per_seed), from a
# seed derived from (the block's seed, the seed): the experiments' seeds are then independent draws of the whole
# process (docs/datasets.md#one-draw-per-seed).
use rule preprocess as preprocess_draw with:
    output:
        interactions=results("data/{dataset}/seed{seed}/interactions.parquet"),
        user_index=results("data/{dataset}/seed{seed}/users.parquet"),
        item_index=results("data/{dataset}/seed{seed}/items.parquet"),
    wildcard_constraints:
        dataset=_alternatives(DRAWN),
    params:
        **job_params(
            dataset="{dataset}",
            generator=draw_block,
            semisynthetic=None,
            own=None,
            code=CODE["preprocess"],
        ),
    log:
        logs("data/{dataset}/seed{seed}/preprocess.log"),
    benchmark:
        bench("data/{dataset}/seed{seed}/preprocess.tsv")
