rule evaluate:
    """Top-k metrics of one recommender on gt and on every intervened test set."""
    input:
        recs="results/e1/{dataset}/seed{seed}/recs/{recommender}.parquet",
        split="results/e1/{dataset}/seed{seed}/split.parquet",
        item_index="results/data/{dataset}/items.parquet",
        testsets=expand(
            "results/e1/{{dataset}}/seed{{seed}}/testsets/{testset}.parquet",
            testset=E1["testsets"],
        ),
    output:
        "results/e1/{dataset}/seed{seed}/metrics/{recommender}.parquet",
    params:
        seed=lambda w: int(w.seed),
        recommender="{recommender}",
        testsets=list(E1["testsets"]),
        ks=E1["ks"],
        metrics=E1["metrics"],
        positive_threshold=E1["positive_threshold"],
        drop_train_overlap=E1["drop_train_overlap"],
        code=CODE,
    threads: resources_of("evaluate")["threads"]
    resources:
        mem_mb=resources_of("evaluate")["mem_mb"],
        runtime=resources_of("evaluate")["runtime"],
    conda:
        "../envs/debiaseval.yaml"
    log:
        "logs/e1/{dataset}/seed{seed}/evaluate/{recommender}.log",
    benchmark:
        "benchmarks/e1/{dataset}/seed{seed}/evaluate/{recommender}.tsv"
    script:
        "../scripts/evaluate.py"
