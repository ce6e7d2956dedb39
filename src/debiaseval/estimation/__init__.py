"""The estimator arena: weighting estimators of ranking metrics from a held-out MNAR part and
how far to trust them (docs/estimators.md).

- :mod:`~debiaseval.estimation.heldout`: the recommender-independent part of an estimator
  for one seed (held-out pairs, labels, weights 1/P, imputation) and the ranks of the pairs;
- :mod:`~debiaseval.estimation.ranking_estimators`: naive, SNIPS and doubly robust estimates
  of a ranking metric per user (DR's one-step form by default, its ratio form as an option);
- :mod:`~debiaseval.estimation.scaled_dr`: DR's ratio form with the imputation scaled by λ,
  SNIPS at λ = 0, λ chosen per seed;
- :mod:`~debiaseval.estimation.weight_control`: clipping, shrinkage (DRos) and switching of
  DR's weights, with the data-driven choice of their threshold;
- :mod:`~debiaseval.estimation.imputation`: the imputations r̂ ≈ P(y = 1) of a candidate pair;
- :mod:`~debiaseval.estimation.diagnostics`: effective sample size, Pareto k̂, weight shares,
  calibration: when not to trust a row;
- :mod:`~debiaseval.estimation.sensitivity`: bounds under propensities wrong by a factor Γ,
  and Γ*, the factor that can flip a comparison;
- :mod:`~debiaseval.estimation.scoreboard`: every row against the truth, with intervals;
- :mod:`~debiaseval.estimation.arena`: E1's seed composed from the above.
"""
