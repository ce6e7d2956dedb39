"""Model selection: what chooses a recommender's hyperparameters with a metric or an
estimator, and the config's recommender entries that name those choices.

It sits above both :mod:`debiaseval.recommenders` (the models) and
:mod:`debiaseval.evaluation` (the metrics and estimators it selects by):

- :mod:`~debiaseval.selection.tuning`: grid search on a validation part, chunked for the
  workflow, with early stopping of models trained by epochs ([SAC20] §5.2);
- :mod:`~debiaseval.selection.ips_cv`: k-fold cross-validation on MNAR data with an
  IPS-estimated validation error ([ICML16] §6.4, eq. 10);
- :mod:`~debiaseval.selection.specs`: a config's recommender entry and its cross-field
  check (grid points built, plugins fitted twice), run before any job.
"""
