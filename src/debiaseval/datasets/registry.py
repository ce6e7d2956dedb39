"""Where each real dataset comes from and how its files are verified (SPEC §2).

Every file a loader reads is listed with the SHA-256 values it may have; the values
were computed on verified copies (see ``/work/shared/datasets/SOURCES.md``). An empty
tuple means "not verified" (only used where no trustworthy per-file value exists).

Archive checksums of ``ml-100k.zip`` and ``ml-1m.zip`` are those TensorFlow Datasets
records in ``tensorflow_datasets/url_checksums/movielens.txt`` (sizes 4,924,029 and
5,917,549 bytes); many independent projects pin the same values. No checksum of
Cornell's ``coat.zip`` is published by its authors, so it is left ``None`` and the
extracted files are checked one by one instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["SOURCES", "DatasetSource"]


@dataclass(frozen=True)
class DatasetSource:
    """A real dataset's canonical origin, its verified files and its terms of use.

    ``files`` maps a path relative to the dataset folder to the accepted SHA-256
    values; ``()`` means the file is required but its content is not verified.
    ``url`` is ``None`` for datasets that can only be obtained by hand, in which
    case ``manual_instructions`` says what to obtain and where to put it.
    """

    name: str
    url: str | None
    archive_sha256: str | None
    archive_root: str
    files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    manual_instructions: str | None = None
    licence: str = ""
    citation: str = ""


_COAT = DatasetSource(
    name="coat",
    url="https://www.cs.cornell.edu/~schnabts/mnar/coat.zip",
    # No author-published checksum; per-file checks below cover every file we use.
    archive_sha256=None,
    archive_root="coat",
    files={
        "README.txt": ("cda6f0f12aa148f5391561ef95a5f2dd6f7e3838ec17e84fcb615bc11a7ffae0",),
        "train.ascii": ("a87bd9e7eaf3b89f976df3f25d4aa5d5d871be8a00b58947df9e6e015559bd37",),
        "test.ascii": ("de6714ab105a5e0be8166be7fd313901b29f9a09c3bea307901457d1d71847e6",),
        # Two copies in circulation differ only in line ends (LF, CRLF); both accepted.
        "propensities.ascii": (
            "a72e3142a413623c4a6b9d20c4f70fcc017e0db67cc3eb242116f69fb8fb9661",
            "d1b11b12465dc6e1df35eeed92dfec5e17a997f920d60777cc44571fe9b054e5",
        ),
        "user_item_features/user_features.ascii": (
            "d8f9531b601c54a7272602f8b21fa6cb4652cbf122e35d8615ea9645ebbf1b1f",
        ),
        "user_item_features/item_features.ascii": (
            "edea8217ec5606779b4d3bf819f7591dc63bcd5194d619e8048c2322d07630b1",
        ),
        "user_item_features/user_features_map.txt": (
            "3b8c825ad4445d4a46a400629c5fb43c805ff5a7982b2e436b69e7262c8a013a",
            "86dfa86c468f2213b0a7acab072cc8e4bd66d05ed050d1e1f2f452c1e9fd195b",
        ),
        "user_item_features/item_features_map.txt": (
            "2675dfaa38b89a9cbb1997f0cfcd46ed7e0e366dc515d12d95508d1f356e5d25",
            "70f97e53b6469a08ba76d259e92de9a4931f97693d2669f8e8836330d30fc109",
        ),
    },
    licence=(
        "No licence text in the package; published by the authors for research use "
        "(https://www.cs.cornell.edu/~schnabts/mnar/)."
    ),
    citation=(
        "T. Schnabel, A. Swaminathan, A. Singh, N. Chandak, T. Joachims. Recommendations as "
        "treatments: debiasing learning and evaluation. ICML 2016."
    ),
)

_YAHOO_PREFIX = "ydata-ymusic-rating-study-v1_0"

_YAHOO = DatasetSource(
    name="yahoo-r3",
    url=None,
    archive_sha256=None,
    archive_root="",  # layout of the Webscope package varies; files are located by name
    files={
        f"{_YAHOO_PREFIX}-train.txt": (
            "85538b3c4a93eafc4f0ce2d39a6cd178e32a6b615ce775b9d635f7995706269d",
        ),
        f"{_YAHOO_PREFIX}-test.txt": (
            "f27a73bef8c7ccedb17576fe2d4cc52b80c2d5fa60f13529596f003ffd0d8533",
        ),
        f"{_YAHOO_PREFIX}-readme.txt": (
            "9a4bf9e9fc6b724b1a29d0403976c757d78b74d32caa290724b44ee4dcd19fb9",
        ),
    },
    manual_instructions=(
        "Yahoo! R3 cannot be downloaded automatically: request the Yahoo! Webscope dataset "
        "'R3 - Yahoo! Music ratings for User Selected and Randomly Selected songs, version 1.0' "
        f"({_YAHOO_PREFIX}) at https://webscope.sandbox.yahoo.com/ (signed Data Sharing "
        f"Agreement required), then put {_YAHOO_PREFIX}-train.txt, {_YAHOO_PREFIX}-test.txt and "
        f"{_YAHOO_PREFIX}-readme.txt, unchanged, in <mirror>/yahoo-r3/ (mirror = the "
        "DEBIASEVAL_MIRROR folder) or in the folder named by the dataset's `path` option."
    ),
    licence=(
        "Yahoo! Webscope Data Sharing Agreement: approved non-commercial research only; "
        "not to be redistributed."
    ),
    citation=(
        "Yahoo! Webscope dataset ydata-ymusic-rating-study-v1_0; B. Marlin, R. Zemel. "
        "Collaborative prediction and ranking with non-random missing data. RecSys 2009."
    ),
)

_GROUPLENS_LICENCE = (
    "GroupLens terms (README): research use only, no redistribution without permission, "
    "no commercial use, acknowledge the data in publications."
)
_GROUPLENS_CITATION = (
    "F. M. Harper, J. A. Konstan. The MovieLens datasets: history and context. ACM TiiS 5(4), 2015."
)

_ML100K = DatasetSource(
    name="ml-100k",
    url="https://files.grouplens.org/datasets/movielens/ml-100k.zip",
    archive_sha256="50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229",
    archive_root="ml-100k",
    files={
        "README": ("4883b8cf340ed0059971b33f56ad3adc88a40792108ebca3d24aafc4c82e8b52",),
        "u.data": ("06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",),
        "u.info": ("5b0a40b2e47a729ee6203063f6dcf8790c2e63f5a18663e6ee318a72c5f3c27b",),
        "u.genre": ("9757e0d3e6b298159a80dd48eaf938114690e911e39af97a76949ef1663610bb",),
        "u.item": ("553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701",),
        "u.occupation": ("cd5fbec9afe345d993a62fc7817df1a4a9079c4feb267b3118763b8fd942137d",),
        "u.user": ("f120e114da2e8cf314fd28f99417c94ae9ddf1cb6db8ce0e4b5995d40e90e62c",),
    },
    licence=_GROUPLENS_LICENCE,
    citation=_GROUPLENS_CITATION,
)

# No faithful copy of ml-1m's files was available to hash (SOURCES.md §4): the files are
# not verified one by one; a download is verified by the archive checksum instead.
_ML1M = DatasetSource(
    name="ml-1m",
    url="https://files.grouplens.org/datasets/movielens/ml-1m.zip",
    archive_sha256="a6898adb50b9ca05aa231689da44c217cb524e7ebd39d264c56e2832f2c54e20",
    archive_root="ml-1m",
    files={"README": (), "ratings.dat": (), "movies.dat": (), "users.dat": ()},
    licence=_GROUPLENS_LICENCE,
    citation=_GROUPLENS_CITATION,
)

SOURCES: dict[str, DatasetSource] = {s.name: s for s in (_COAT, _YAHOO, _ML100K, _ML1M)}
