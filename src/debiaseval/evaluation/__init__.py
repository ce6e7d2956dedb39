"""Evaluation: metrics of top-k lists, loss estimators (Naive, IPS, SNIPS), Unbiased Recall
Evaluation, the leave-one-out protocol, lists made elsewhere, and intervals over seeds and users.
The top-k lists themselves are made by :mod:`debiaseval.recommenders.ranking`, below."""
