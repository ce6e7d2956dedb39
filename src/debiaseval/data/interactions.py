"""Interaction frames as sparse matrices with the canonical columns user, item, rating.

See docs/datasets.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["rating_matrix"]


def rating_matrix(frame: pd.DataFrame, n_users: int, n_items: int) -> sp.csr_matrix:
    """Users x items CSR matrix of the frame's ratings (float32; duplicate pairs summed)."""
    matrix = sp.csr_matrix(
        (
            frame["rating"].to_numpy(np.float32),
            (frame["user"].to_numpy(np.int64), frame["item"].to_numpy(np.int64)),
        ),
        shape=(n_users, n_items),
    )
    matrix.sum_duplicates()
    matrix.sort_indices()
    return matrix
