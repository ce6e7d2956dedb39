rule split:
    """E1 split: MNAR -> train/heldout, MAR -> weights/val/gt ([SAC20])."""
    input:
        interactions="results/data/{dataset}/interactions.parquet",
    output:
        "results/e1/{dataset}/seed{seed}/split.parquet",
    params:
        dataset="{dataset}",
        seed=lambda w: int(w.seed),
        mnar_split=E1["mnar_split"],
        mar_split=E1["mar_split"],
        code=CODE,
    conda:
        "../envs/debiaseval.yaml"
    log:
        "logs/e1/{dataset}/seed{seed}/split.log",
    script:
        "../scripts/split.py"
