"""Experiments E1–E6 of SPEC §7: each module composes the library's methods for one study.

An experiment module holds no method of its own: splits, interventions,
recommenders, metrics and estimators live in their own modules and are usable
without Snakemake; ``experiments/eN.py`` only wires them into the study's
steps, which the workflow's ``eN_*`` rules call one at a time.
"""
