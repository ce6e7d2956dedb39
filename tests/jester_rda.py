"""Tiny R data files shaped like recommenderlab's Jester5k.rda, written by the tests themselves.

``rdata`` converts Python values to R objects and writes them; it has no writer for S4
objects, so :class:`_S4Unparser` adds the one case: an S4 object is its flags and its
attributes (the slots and ``class``), as R serialises it.
"""

from __future__ import annotations

import lzma
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from rdata.conversion import ConverterFromPythonToR
from rdata.conversion.to_r import build_r_object
from rdata.parser import RObjectType
from rdata.unparser import UnparserXDR

R_DOUBLE_XMIN = 2.2250738585072014e-308


@dataclass
class S4:
    """An S4 object of class ``cls`` with ``slots``."""

    cls: str
    slots: dict[str, Any] = field(default_factory=dict)


def _s4_object(data: S4, converter: ConverterFromPythonToR):
    attributes = converter.convert_to_r_attributes({**data.slots, "class": np.array([data.cls])})
    return build_r_object(RObjectType.S4, is_object=True, attributes=attributes)


class _S4Unparser(UnparserXDR):
    def unparse_r_object(self, obj) -> None:
        if obj.info.type != RObjectType.S4:
            return super().unparse_r_object(obj)
        flags = RObjectType.S4.value | (1 << 8) | (1 << 9)  # type | object | has attributes
        self.unparse_int(flags)
        self.unparse_r_object(obj.attributes)
        return None


def dgcmatrix(dense: np.ndarray, users: list[str], jokes: list[str]) -> S4:
    """The ``dgCMatrix`` of ``dense`` (NaN = missing; 0.0 stored as R's double.xmin, as
    recommenderlab does)."""
    stored = np.where(dense == 0.0, R_DOUBLE_XMIN, dense)
    matrix = sp.csc_matrix(np.nan_to_num(stored, nan=0.0))
    matrix.sort_indices()
    return S4(
        "dgCMatrix",
        {
            "i": matrix.indices.astype(np.int32),
            "p": matrix.indptr.astype(np.int32),
            "Dim": np.array(dense.shape, dtype=np.int32),
            "Dimnames": [np.array(users), np.array(jokes)],
            "x": matrix.data.astype(np.float64),
            "factors": [],
        },
    )


def write_rda(path: Path, objects: dict[str, Any]) -> Path:
    """Write ``objects`` (name -> value, :class:`S4` objects included) as an xz-compressed
    R data file (format 3, XDR), as ``save(..., compress = "xz")`` does."""
    converter = ConverterFromPythonToR(constructor_dict={S4: _s4_object})
    data = converter.convert_to_r_data(objects, file_type="rda")
    with lzma.open(path, "wb") as out:
        out.write(f"RDX{data.versions.format}\n".encode("ascii"))
        _S4Unparser(out).unparse_r_data(data)
    return path


def write_jester(path: Path, dense: np.ndarray, *, texts: bool = True) -> Path:
    """A Jester5k.rda of ``dense`` (users × jokes, NaN = not rated): the realRatingMatrix
    ``Jester5k`` over its dgCMatrix, users ``u<10 + row>``, jokes ``j<1 + column>``, and the
    joke texts ``JesterJokes``."""
    users = [f"u{10 + row}" for row in range(dense.shape[0])]
    jokes = [f"j{1 + col}" for col in range(dense.shape[1])]
    objects: dict[str, Any] = {
        "Jester5k": S4("realRatingMatrix", {"data": dgcmatrix(dense, users, jokes)})
    }
    if texts:
        objects["JesterJokes"] = np.array([f"joke {joke}" for joke in jokes])
    return write_rda(path, objects)
