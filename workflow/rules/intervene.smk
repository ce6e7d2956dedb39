rule intervene:
    """Draw one intervened test set from the held-out MNAR part (SPEC section 4)."""
    input:
        split="results/e1/{dataset}/seed{seed}/split.parquet",
        user_index="results/data/{dataset}/users.parquet",
        item_index="results/data/{dataset}/items.parquet",
    output:
        "results/e1/{dataset}/seed{seed}/testsets/{testset}.parquet",
    params:
        dataset="{dataset}",
        seed=lambda w: int(w.seed),
        testset="{testset}",
        spec=lambda w: E1["testsets"][w.testset],
        rho=E1["rho"],
        code=CODE,
    conda:
        "../envs/debiaseval.yaml"
    log:
        "logs/e1/{dataset}/seed{seed}/testsets/{testset}.log",
    script:
        "../scripts/intervene.py"
