"""Evaluation: top-k lists and metrics, loss estimators (Naive, IPS, SNIPS), Unbiased
Recall Evaluation, the leave-one-out protocol, and aggregation over seeds."""
