rule train:
    """Tune one recommender on MAR val, then write its top-k lists ([SAC20])."""
    input:
        split="results/e1/{dataset}/seed{seed}/split.parquet",
        user_index="results/data/{dataset}/users.parquet",
        item_index="results/data/{dataset}/items.parquet",
    output:
        recs="results/e1/{dataset}/seed{seed}/recs/{recommender}.parquet",
        tuning="results/e1/{dataset}/seed{seed}/tuning/{recommender}.parquet",
    params:
        dataset="{dataset}",
        seed=lambda w: int(w.seed),
        recommender="{recommender}",
        spec=lambda w: E1["recommenders"][w.recommender],
        tuning=E1["tuning"],
        ks=E1["ks"],
        positive_threshold=E1["positive_threshold"],
        batch_size=E1["batch_size"],
        code=CODE,
    threads: resources_of("train")["threads"]
    resources:
        mem_mb=resources_of("train")["mem_mb"],
        runtime=resources_of("train")["runtime"],
    conda:
        "../envs/debiaseval.yaml"
    log:
        "logs/e1/{dataset}/seed{seed}/train/{recommender}.log",
    benchmark:
        "benchmarks/e1/{dataset}/seed{seed}/train/{recommender}.tsv"
    script:
        "../scripts/train.py"
