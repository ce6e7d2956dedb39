"""Download, safe extraction and atomic dataset materialisation (no network: 127.0.0.1 only)."""

from __future__ import annotations

import hashlib
import http.server
import io
import re
import stat
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from debiaseval.data import (
    MIRROR_ENV,
    SOURCES,
    DatasetError,
    DatasetSource,
    download_file,
    fetch_dataset,
    safe_extract,
    sha256_file,
)

TOY_FILES = {"ratings.txt": b"1\t2\t5\n2\t3\t1\n", "docs/README": b"toy dataset\n"}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _toy_zip() -> bytes:
    return _zip_bytes({f"toy/{rel}": data for rel, data in TOY_FILES.items()})


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server on 127.0.0.1 serving ``tmp_path/www``."""
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=root))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> DatasetSource:
    """Register a tiny dataset ``toy`` whose files the tests write themselves."""
    source = DatasetSource(
        name="toy",
        url=None,
        archive_sha256=_sha(_toy_zip()),
        archive_root="toy",
        files={rel: (_sha(data),) for rel, data in TOY_FILES.items()},
        licence="test",
        citation="test",
    )
    monkeypatch.setitem(SOURCES, "toy", source)
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    return source


def _write_toy(folder: Path, files: dict[str, bytes] = TOY_FILES) -> Path:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


# --------------------------------------------------------------------------- registry


def test_registry_lists_the_four_real_datasets() -> None:
    assert set(SOURCES) >= {"coat", "yahoo-r3", "ml-100k", "ml-1m", "librarything"}
    hexdigest = re.compile(r"^[0-9a-f]{64}$")
    for source in SOURCES.values():
        assert source.files and source.licence and source.citation
        for accepted in source.files.values():
            assert all(hexdigest.match(v) for v in accepted)
        if source.archive_sha256 is not None:
            assert hexdigest.match(source.archive_sha256)
    assert SOURCES["yahoo-r3"].url is None and SOURCES["yahoo-r3"].manual_instructions
    assert len(SOURCES["coat"].files["propensities.ascii"]) == 2  # LF and CRLF copies
    assert SOURCES["ml-1m"].files["ratings.dat"] == ()
    assert SOURCES["ml-100k"].archive_sha256 == (
        "50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229"
    )
    assert all(s.url is None or s.url.startswith("https://") for s in SOURCES.values())


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "abc"
    path.write_bytes(b"abc")
    assert sha256_file(path) == _sha(b"abc")


# --------------------------------------------------------------------------- download_file


def test_download_over_local_http(server: tuple[str, Path], tmp_path: Path) -> None:
    base, www = server
    data = _toy_zip()
    (www / "toy.zip").write_bytes(data)
    out = tmp_path / "dl"
    got = download_file(f"{base}/toy.zip", out / "toy.zip", sha256=_sha(data))
    assert got == out / "toy.zip"
    assert got.read_bytes() == data
    assert _leftovers(out) == ["toy.zip"]


def test_download_checksum_mismatch_leaves_nothing(
    server: tuple[str, Path], tmp_path: Path
) -> None:
    base, www = server
    (www / "toy.zip").write_bytes(_toy_zip())
    out = tmp_path / "dl"
    url = f"{base}/toy.zip"
    with pytest.raises(DatasetError) as err:
        download_file(url, out / "toy.zip", sha256="0" * 64)
    msg = str(err.value)
    assert url in msg and "0" * 64 in msg and _sha(_toy_zip()) in msg
    assert "\n" not in msg
    assert _leftovers(out) == []


def test_download_404_leaves_nothing(server: tuple[str, Path], tmp_path: Path) -> None:
    base, _ = server
    out = tmp_path / "dl"
    with pytest.raises(DatasetError, match="404"):
        download_file(f"{base}/missing.zip", out / "missing.zip", sha256=None)
    assert _leftovers(out) == []


def test_download_file_url(tmp_path: Path) -> None:
    src = tmp_path / "src.zip"
    src.write_bytes(b"payload")
    dest = download_file(src.as_uri(), tmp_path / "out" / "copy.zip", sha256=_sha(b"payload"))
    assert dest.read_bytes() == b"payload"


@pytest.mark.parametrize("url", ["http://example.com/x.zip", "ftp://127.0.0.1/x.zip"])
def test_download_refuses_insecure_schemes(url: str, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="refusing"):
        download_file(url, tmp_path / "x.zip", sha256=None)
    assert not (tmp_path / "x.zip").exists()


# --------------------------------------------------------------------------- safe_extract


def _zip_with(tmp_path: Path, name: str, data: bytes = b"x", *, mode: int = 0) -> Path:
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("ok.txt", b"fine")
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        zf.writestr(info, data)
    return path


def _tar_with(tmp_path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    path = tmp_path / "bad.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        ok = tarfile.TarInfo("ok.txt")
        ok.size = 4
        tf.addfile(ok, io.BytesIO(b"fine"))
        member.size = len(data) if member.isfile() else 0
        tf.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


def _tar_member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


@pytest.mark.parametrize(
    ("name", "data", "mode"),
    [
        ("../evil", b"x", 0),
        ("sub/../../evil", b"x", 0),
        ("/abs/evil", b"x", 0),
        ("link", b"../../outside", stat.S_IFLNK | 0o777),
        ("link", b"/etc/passwd", stat.S_IFLNK | 0o777),
        ("dev", b"", stat.S_IFCHR | 0o644),
    ],
)
def test_safe_extract_rejects_unsafe_zip(tmp_path: Path, name: str, data: bytes, mode: int) -> None:
    archive = _zip_with(tmp_path, name, data, mode=mode)
    dest = tmp_path / "out"
    with pytest.raises(DatasetError) as err:
        safe_extract(archive, dest)
    assert "bad.zip" in str(err.value) and repr(name) in str(err.value)
    assert not any(dest.iterdir())  # validated before anything is written
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize(
    "member",
    [
        _tar_member("../evil"),
        _tar_member("/abs/evil"),
        _tar_member("link", tarfile.SYMTYPE, "../../outside"),
        _tar_member("link", tarfile.SYMTYPE, "/etc"),
        _tar_member("hard", tarfile.LNKTYPE, "../outside"),
        _tar_member("dev", tarfile.CHRTYPE),
        _tar_member("fifo", tarfile.FIFOTYPE),
    ],
    ids=["dotdot", "absolute", "symlink-up", "symlink-abs", "hardlink", "device", "fifo"],
)
def test_safe_extract_rejects_unsafe_tar(tmp_path: Path, member: tarfile.TarInfo) -> None:
    archive = _tar_with(tmp_path, member, b"x" if member.isfile() else b"")
    dest = tmp_path / "out"
    with pytest.raises(DatasetError) as err:
        safe_extract(archive, dest)
    assert "bad.tar.gz" in str(err.value) and repr(member.name) in str(err.value)
    assert not any(dest.iterdir())


def test_safe_extract_rejects_paths_through_links(tmp_path: Path) -> None:
    path = tmp_path / "bad.tar"
    with tarfile.open(path, "w") as tf:
        tf.addfile(_tar_member("d", tarfile.SYMTYPE, "sub"))
        f = _tar_member("d/file")
        f.size = 1
        tf.addfile(f, io.BytesIO(b"x"))
    with pytest.raises(DatasetError, match="'d/file'"):
        safe_extract(path, tmp_path / "out")


def test_safe_extract_rejects_link_chains(tmp_path: Path) -> None:
    # "b" -> "." is harmless alone, but "a" -> "b/../evil" would resolve outside the folder.
    path = tmp_path / "chain.tar"
    with tarfile.open(path, "w") as tf:
        tf.addfile(_tar_member("b", tarfile.SYMTYPE, "."))
        tf.addfile(_tar_member("a", tarfile.SYMTYPE, "b/../evil"))
    with pytest.raises(DatasetError, match=r"'a'.*through another link"):
        safe_extract(path, tmp_path / "out")
    zpath = tmp_path / "chain.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for name, target in (("b", b"."), ("a", b"b/../evil")):
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    with pytest.raises(DatasetError, match=r"'a'.*through another link"):
        safe_extract(zpath, tmp_path / "zout")
    assert not (tmp_path / "evil").exists()


def test_safe_extract_accepts_safe_archives(tmp_path: Path) -> None:
    zpath = tmp_path / "good.zip"
    zpath.write_bytes(_toy_zip())
    safe_extract(zpath, tmp_path / "z")
    assert (tmp_path / "z" / "toy" / "ratings.txt").read_bytes() == TOY_FILES["ratings.txt"]
    tpath = tmp_path / "good.tar.gz"
    with tarfile.open(tpath, "w:gz") as tf:
        f = _tar_member("pkg/a.txt")
        f.size = 2
        tf.addfile(f, io.BytesIO(b"hi"))
        tf.addfile(_tar_member("pkg/b.txt", tarfile.SYMTYPE, "a.txt"))
    safe_extract(tpath, tmp_path / "t")
    assert (tmp_path / "t" / "pkg" / "b.txt").read_bytes() == b"hi"


def test_safe_extract_rejects_other_files(tmp_path: Path) -> None:
    path = tmp_path / "plain.txt"
    path.write_text("not an archive")
    with pytest.raises(DatasetError, match=r"plain\.txt"):
        safe_extract(path, tmp_path / "out")


# --------------------------------------------------------------------------- fetch_dataset


def test_fetch_from_mirror_copies_files(toy: DatasetSource, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    _write_toy(mirror / "toy")
    dest = fetch_dataset("toy", tmp_path / "data" / "toy", mirror=mirror)
    for rel, data in TOY_FILES.items():
        assert (dest / rel).read_bytes() == data
        assert not (dest / rel).is_symlink()
    assert _leftovers(tmp_path / "data") == ["toy"]


def test_fetch_uses_env_mirror(
    toy: DatasetSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_toy(tmp_path / "mirror" / "toy")
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    dest = fetch_dataset("toy", tmp_path / "out")
    assert (dest / "ratings.txt").read_bytes() == TOY_FILES["ratings.txt"]


def test_fetch_corrupted_mirror_file_names_it(toy: DatasetSource, tmp_path: Path) -> None:
    bad = {**TOY_FILES, "ratings.txt": b"1\t2\t4\n"}
    _write_toy(tmp_path / "mirror" / "toy", bad)
    dest = tmp_path / "data" / "toy"
    with pytest.raises(DatasetError) as err:
        fetch_dataset("toy", dest, mirror=tmp_path / "mirror")
    msg = str(err.value)
    assert "ratings.txt" in msg
    assert _sha(TOY_FILES["ratings.txt"]) in msg and _sha(bad["ratings.txt"]) in msg
    assert _leftovers(tmp_path / "data") == []


def test_fetch_missing_file_names_it(toy: DatasetSource, tmp_path: Path) -> None:
    _write_toy(tmp_path / "mirror" / "toy", {"ratings.txt": TOY_FILES["ratings.txt"]})
    with pytest.raises(DatasetError, match="docs/README"):
        fetch_dataset("toy", tmp_path / "data" / "toy", mirror=tmp_path / "mirror")
    assert _leftovers(tmp_path / "data") == []


def test_fetch_path_has_priority(toy: DatasetSource, tmp_path: Path) -> None:
    _write_toy(tmp_path / "mirror" / "toy", {**TOY_FILES, "ratings.txt": b"bad"})
    user = _write_toy(tmp_path / "mine")
    dest = fetch_dataset("toy", tmp_path / "out", mirror=tmp_path / "mirror", path=user)
    assert (dest / "ratings.txt").read_bytes() == TOY_FILES["ratings.txt"]


def test_fetch_path_may_be_an_archive(toy: DatasetSource, tmp_path: Path) -> None:
    archive = tmp_path / "toy.zip"
    archive.write_bytes(_zip_bytes({f"nested/pkg/{r}": d for r, d in TOY_FILES.items()}))
    dest = fetch_dataset("toy", tmp_path / "out", path=archive)
    assert (dest / "docs" / "README").read_bytes() == TOY_FILES["docs/README"]


def test_fetch_downloads_when_no_local_copy(
    toy: DatasetSource, server: tuple[str, Path], tmp_path: Path
) -> None:
    base, www = server
    (www / "toy.zip").write_bytes(_toy_zip())
    (tmp_path / "mirror").mkdir()  # a mirror without this dataset falls through
    dest = fetch_dataset(
        "toy", tmp_path / "data" / "toy", mirror=tmp_path / "mirror", url=f"{base}/toy.zip"
    )
    assert (dest / "ratings.txt").read_bytes() == TOY_FILES["ratings.txt"]
    assert _leftovers(tmp_path / "data") == ["toy"]


def test_fetch_download_bad_archive_leaves_nothing(
    toy: DatasetSource, server: tuple[str, Path], tmp_path: Path
) -> None:
    base, www = server
    (www / "toy.zip").write_bytes(_zip_bytes({"toy/ratings.txt": b"other"}))
    with pytest.raises(DatasetError, match="checksum mismatch"):
        fetch_dataset("toy", tmp_path / "data" / "toy", url=f"{base}/toy.zip")
    assert _leftovers(tmp_path / "data") == []


def test_fetch_failure_keeps_existing_dest(toy: DatasetSource, tmp_path: Path) -> None:
    dest = tmp_path / "data" / "toy"
    dest.mkdir(parents=True)
    (dest / "keep").write_text("old")
    _write_toy(tmp_path / "mirror" / "toy", {"ratings.txt": b"corrupt"})
    with pytest.raises(DatasetError):
        fetch_dataset("toy", dest, mirror=tmp_path / "mirror")
    assert _leftovers(tmp_path / "data") == ["toy"]
    assert (dest / "keep").read_text() == "old"
    _write_toy(tmp_path / "mirror" / "toy")
    fetch_dataset("toy", dest, mirror=tmp_path / "mirror")
    assert not (dest / "keep").exists() and (dest / "ratings.txt").exists()


def test_fetch_manual_dataset_explains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    (tmp_path / "mirror").mkdir()
    with pytest.raises(DatasetError) as err:
        fetch_dataset("yahoo-r3", tmp_path / "data" / "yahoo-r3", mirror=tmp_path / "mirror")
    instructions = SOURCES["yahoo-r3"].manual_instructions
    assert instructions is not None and instructions in str(err.value)
    assert "ydata-ymusic-rating-study-v1_0-train.txt" in str(err.value)
    assert "\n" not in str(err.value)
    assert _leftovers(tmp_path / "data") == []


def test_fetch_unknown_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="unknown dataset 'nope'"):
        fetch_dataset("nope", tmp_path / "x")


def test_fetch_manual_dataset_incomplete_copy(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "ydata-ymusic-rating-study-v1_0-train.txt").write_text("1\t1\t1\n")
    with pytest.raises(DatasetError) as err:
        fetch_dataset("yahoo-r3", tmp_path / "out", path=folder)
    msg = str(err.value)
    assert "missing files ydata-ymusic-rating-study-v1_0-test.txt, " in msg
    assert "webscope.sandbox.yahoo.com" in msg and "\n" not in msg
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- what to do


def test_fetch_nonexistent_mirror_is_an_error_naming_it(
    toy: DatasetSource, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nonexistent"
    with pytest.raises(DatasetError) as err:
        fetch_dataset("toy", tmp_path / "out", mirror=missing, mirror_origin="config key `mirror`")
    assert str(err.value) == (
        f"toy: the dataset mirror {missing} (config key `mirror`) does not exist or is not a "
        "folder; point it at the folder holding one subfolder per dataset, or unset it"
    )
    monkeypatch.setenv(MIRROR_ENV, str(missing))
    with pytest.raises(DatasetError, match=rf"mirror {missing} \(\$DEBIASEVAL_MIRROR\) does not"):
        fetch_dataset("toy", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_fetch_nonexistent_path_is_an_error_naming_it(toy: DatasetSource, tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as err:
        fetch_dataset("toy", tmp_path / "out", path=tmp_path / "nowhere")
    assert str(err.value).startswith(
        f"toy: sources.toy.path {tmp_path / 'nowhere'} does not exist; set it to a folder"
    )


def test_download_failure_says_what_to_do(
    toy: DatasetSource, server: tuple[str, Path], tmp_path: Path
) -> None:
    base, _ = server
    with pytest.raises(DatasetError) as err:
        fetch_dataset("toy", tmp_path / "data" / "toy", url=f"{base}/missing.zip")
    msg = str(err.value)
    assert msg.startswith(f"toy: cannot download {base}/missing.zip: HTTP Error 404")
    assert msg.endswith(
        "; put its files in <mirror>/toy/ (mirror: the config key `mirror` or "
        "$DEBIASEVAL_MIRROR), or set sources.toy.path to a folder or archive holding them, "
        "or sources.toy.url to another copy of the archive"
    )
    assert "\n" not in msg and _leftovers(tmp_path / "data") == []


def test_file_checksum_mismatch_says_what_to_do(toy: DatasetSource, tmp_path: Path) -> None:
    _write_toy(tmp_path / "mirror" / "toy", {**TOY_FILES, "ratings.txt": b"damaged"})
    with pytest.raises(DatasetError, match=r"replace it with the canonical file, or put its files"):
        fetch_dataset("toy", tmp_path / "data" / "toy", mirror=tmp_path / "mirror")


def test_a_truncated_download_is_named_as_such(tmp_path: Path) -> None:
    """Issue 43, case 12: a body cut short of its Content-Length (542,886 bytes announced, a
    third sent, then closed) was reported as "neither a zip nor a tar archive"."""

    class Cut(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "542886")
            self.end_headers()
            self.wfile.write(_toy_zip()[:100] + b"\0" * (542886 // 3 - 100))
            self.wfile.flush()
            self.close_connection = True

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Cut)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/coat.zip"
    try:
        with pytest.raises(DatasetError) as error:
            download_file(url, tmp_path / "coat.zip", sha256=None)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert str(error.value) == (
        f"cannot download {url}: the connection closed after 180,962 of the 542,886 bytes it "
        "announced (truncated): run again"
    )
    assert _leftovers(tmp_path) == []
