"""Debiasing: weighted sampling, intervened test sets, propensity models and KL-optimised
item weights."""
