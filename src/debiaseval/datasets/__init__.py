"""Datasets made ready to use: a dataset by name as the workflow's download and preprocess
rules make it, including the one built with a model.

It sits above :mod:`debiaseval.data` (sources, loaders, preprocessing, generators), and
above :mod:`debiaseval.recommenders` and :mod:`debiaseval.evaluation`, because
``ml-100k-semi`` completes ML-100K with a rating MF chosen by accuracy ([ICML16] §6.2):

- :mod:`~debiaseval.datasets.build`: a dataset's canonical frames from its raw files or
  its generator (the workflow's ``preprocess`` rule and the Python API);
- :mod:`~debiaseval.datasets.load`: a dataset by name, fetched and built as the workflow
  does (``debiaseval.api.load_dataset``);
- :mod:`~debiaseval.datasets.semisynthetic`: the semi-synthetic ML-100K.
"""
