"""What one step of an experiment reads: a frozen dataclass per step, declared once.

Every step (a workflow rule) that reads config values has one: its experiment's ``steps.py``
(``tables.py`` for an aggregate step) declares a subclass of :class:`StepConfig` whose fields
are exactly the values the step reads, one mechanism for every rule of ``workflow/rules/e*.smk``
(``tests/test_steps.py`` lists them). What comes from wildcards (dataset, seed, a recommender's
spec), file lists and the ``code``/``plugin`` stamps stay params of their own. The same object
travels the three ways a step is called:

- the rule passes ``step=lambda w: E6Evaluate.of(config, w.dataset).params()``: plain JSON
  (str, int, float, bool, None, lists and dicts), which Snakemake's params trigger tracks;
- the script forwards ``E6Evaluate.from_params(snakemake.params.step)`` unchanged;
- ``run()`` builds ``E6Evaluate.of(config, dataset)`` once and forwards it.

:meth:`StepConfig.of` reads each field from the experiment's block (:attr:`StepConfig.BLOCK`)
under the field's name (a ``positive_threshold`` resolved for the dataset); a step that reads a
value elsewhere in the config (top-level ``min_users``), a nested key or only part of one
overrides :meth:`StepConfig.values`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from debiaseval.data.catalog import positive_threshold_of

__all__ = ["StepConfig", "plain"]

S = TypeVar("S", bound="StepConfig")


def plain(value: Any) -> Any:
    """``value`` as plain JSON: mappings as dicts (string keys), sequences as lists; a
    ``TypeError`` for anything else but str, int, float, bool and None."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    raise TypeError(f"a step config holds plain JSON values, not {type(value).__name__}")


@dataclasses.dataclass(frozen=True)
class StepConfig:
    """Base of the step configs: build it from a validated config, give it as params, take it
    back from them."""

    BLOCK: ClassVar[str] = ""
    """The experiment's config block (``"e6"``) that :meth:`of` reads the fields from."""

    @classmethod
    def of(cls: type[S], config: Mapping[str, Any], dataset: str) -> S:
        """The step's values for ``dataset`` in the validated ``config`` (:meth:`values`)."""
        return cls(**cls.values(config, dataset))

    @classmethod
    def values(cls, config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
        """Each field found in the experiment's block, under its own name; a
        ``positive_threshold`` resolved for ``dataset`` (the block's, else the dataset's
        convention, :func:`~debiaseval.data.catalog.positive_threshold_of`)."""
        block = config[cls.BLOCK]
        out = {f.name: block[f.name] for f in dataclasses.fields(cls) if f.name in block}
        if "positive_threshold" in out:
            out["positive_threshold"] = positive_threshold_of(
                dataset, block["positive_threshold"], config["sources"]
            )
        return out

    def params(self) -> dict[str, Any]:
        """The values as plain JSON, one key per field (a rule's ``params:``)."""
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_params(cls: type[S], params: Mapping[str, Any]) -> S:
        """The step config :meth:`params` gave (a ``TypeError`` naming a missing or unknown key)."""
        return cls(**params)
