"""Markdown tables of data frames: floats to 4 significant digits, NaN as an empty cell."""

import numpy as np
import pandas as pd

from debiaseval.io.markdown_tables import markdown_table


def test_markdown_table():
    text = markdown_table(pd.DataFrame({"a": [1, 2], "b": [0.123456, np.nan]}))
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1 | 0.1235 |", "| 2 |  |"]
