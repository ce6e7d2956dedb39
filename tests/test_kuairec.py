"""KuaiRec loader on a fixture in the release's CSV format (tests/data/kuairec)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from debiaseval.data.kuairec import (
    KUAIREC_POSITIVE_THRESHOLD,
    KUAIREC_SOURCE,
    fully_exposed_frame,
    load_kuairec,
    read_kuairec_matrix,
    read_video_durations,
)
from debiaseval.io.errors import DatasetError

FIXTURE = Path(__file__).parent / "data" / "kuairec"


def test_small_matrix_is_read_with_missing_timestamps():
    small = read_kuairec_matrix(FIXTURE / "small_matrix.csv")
    assert list(small.columns) == ["user", "item", "rating", "timestamp"]
    assert len(small) == 19  # 4 x 5 minus one blocked pair
    assert small["timestamp"].isna().sum() == 2
    row = small[(small["user"] == 21) & (small["item"] == 3650)]
    assert row["rating"].iat[0] == pytest.approx(3.099935584798012)
    assert ((small["user"] == 21) & (small["item"] == 289)).sum() == 0


def test_big_matrix_repeated_views_keep_the_largest_ratio():
    big = read_kuairec_matrix(FIXTURE / "big_matrix.csv")
    assert len(big) == 9  # 10 rows, one pair twice
    row = big[(big["user"] == 14) & (big["item"] == 148)]
    assert row["rating"].iat[0] == pytest.approx(3.2965221691115873)
    assert row["timestamp"].iat[0] == pytest.approx(1593898280.501)


def test_fully_exposed_frame_reindexes_and_marks_positives():
    data = load_kuairec(FIXTURE)
    assert data.big is None
    inter, users, items = fully_exposed_frame(data)
    assert users["raw_user"].tolist() == [14, 19, 21, 23]
    assert items["raw_item"].tolist() == [148, 183, 289, 3650, 10000]
    assert items["first_category"].tolist() == [8, 27, 9, 1, 28]
    assert items["n_categories"].tolist() == [1, 2, 1, 3, 1]
    # the median duration of each video over the small matrix's rows (E5's inverse exposure)
    assert items["video_duration"].tolist() == [6783.5, 6067.0, 5966.0, 6016.5, 8416.5]
    assert inter["user"].dtype == np.int32 and inter["rating"].dtype == np.float32
    assert (inter["part"] == "full").all()
    positive = inter[inter["rating"] > KUAIREC_POSITIVE_THRESHOLD]
    assert sorted(zip(positive["user"], positive["item"], strict=True)) == [
        (0, 4),
        (1, 1),
        (2, 3),
        (3, 1),
        (3, 3),
    ]
    assert load_kuairec(FIXTURE, big=True).big is not None


def test_registry_entry_names_the_release():
    assert KUAIREC_SOURCE.url.startswith("https://zenodo.org/records/18164998/")
    assert "small_matrix.csv" in KUAIREC_SOURCE.files


@pytest.mark.parametrize(
    ("line", "replacement", "message"),
    [
        (0, "user,video,watch_ratio", "line 1: expected the header"),
        (3, "14,abc,1,1,,,,0.5", "line 4: expected a number in column video_id"),
        (2, "14,-3,1,1,,,,0.5", "line 3: expected a video id"),
        (5, "14,10000,1,1,,,,", "line 6: expected a watch_ratio"),
        (4, "1.5,3650,1,1,,,,0.2", "line 5: expected a user id"),
    ],
)
def test_malformed_files_name_the_line(tmp_path, line, replacement, message):
    lines = (FIXTURE / "small_matrix.csv").read_text().splitlines()
    lines[line] = replacement
    (tmp_path / "small_matrix.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=message):
        read_kuairec_matrix(tmp_path / "small_matrix.csv")


def test_missing_file(tmp_path):
    shutil.copy(FIXTURE / "item_categories.csv", tmp_path)
    with pytest.raises(DatasetError, match=r"small_matrix\.csv: file not found"):
        load_kuairec(tmp_path)


def test_video_durations_are_medians_and_a_bad_one_names_its_line(tmp_path):
    durations = read_video_durations(FIXTURE / "small_matrix.csv")
    assert durations["item"].tolist() == [148, 183, 289, 3650, 10000]
    lines = (FIXTURE / "small_matrix.csv").read_text().splitlines()
    fields = lines[2].split(",")
    fields[3] = "0"
    lines[2] = ",".join(fields)
    (tmp_path / "small_matrix.csv").write_text("\n".join(lines) + "\n")
    message = r"small_matrix\.csv: line 3: expected a video_duration > 0"
    with pytest.raises(DatasetError, match=message):
        read_video_durations(tmp_path / "small_matrix.csv")
