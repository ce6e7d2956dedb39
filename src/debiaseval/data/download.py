"""Fetch a dataset's canonical files: verified, extracted safely, never left partial.

See docs/datasets.md.

A dataset folder is materialised from, in order: a user-supplied ``path`` (folder or
archive), a local ``mirror`` (or ``$DEBIASEVAL_MIRROR``) holding ``<mirror>/<name>/``,
or the canonical archive downloaded over HTTPS. Every file listed in
:data:`debiaseval.data.registry.SOURCES` is copied and checked against its recorded
SHA-256 before the folder is renamed into place.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.client
import os
import posixpath
import shutil
import signal
import socket
import stat
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from debiaseval.data.registry import SOURCES, DatasetSource
from debiaseval.io.errors import DatasetError
from debiaseval.io.files import atomic_path, sha256_file

__all__ = [
    "DATA_ENV",
    "MIRROR_ENV",
    "DownloadLimits",
    "cache_folder",
    "download_file",
    "fetch_dataset",
    "safe_extract",
    "sha256_file",
    "what_to_do",
]

MIRROR_ENV = "DEBIASEVAL_MIRROR"
DATA_ENV = "DEBIASEVAL_DATA"
_CHUNK = 1 << 20
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass(frozen=True)
class DownloadLimits:
    """What one download may take (config block ``download``, docs/datasets.md): the whole
    download's wall time in seconds, and the megabytes (2**20 bytes) downloaded and extracted."""

    deadline: float = 1800.0
    max_mb: float = 1024.0
    max_extracted_mb: float = 4096.0

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb * 2**20)

    @property
    def max_extracted_bytes(self) -> int:
        return int(self.max_extracted_mb * 2**20)


_DEFAULT_LIMITS = DownloadLimits()


def cache_folder() -> Path:
    """Where the Python API keeps datasets' raw files, one folder per dataset.

    ``$DEBIASEVAL_DATA`` if set, else the user's cache folder for debiaseval
    (``platformdirs.user_cache_dir``: ``~/.cache/debiaseval`` on Linux,
    ``~/Library/Caches/debiaseval`` on macOS), never the current folder. The
    workflow keeps its own copies in ``resources/raw/`` (see docs/datasets.md).
    """
    env = os.environ.get(DATA_ENV, "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("debiaseval", appauthor=False))


# --------------------------------------------------------------------------- download


def _check_url(url: str, *, allow_file: bool = True, after: str | None = None) -> None:
    """The URL policy, for the URL asked for and for every redirect (``after`` = the URL that
    redirected): https://, http:// only to this machine (tests), file:// only as the URL asked
    for; a redirect may not go from https:// to anything else."""
    parts = urllib.parse.urlsplit(url)
    what = f"a redirect from {after} to {url}" if after else url
    if ".." in urllib.parse.unquote(parts.path).split("/"):
        raise DatasetError(f"refusing {what}: its path has a '..' part; give the archive's own URL")
    if (
        after is not None
        and urllib.parse.urlsplit(after).scheme == "https"
        and parts.scheme != "https"
    ):
        raise DatasetError(f"refusing {what}: a download that starts on https:// stays on it")
    if parts.scheme == "https" or (parts.scheme == "file" and allow_file and after is None):
        return
    if parts.scheme == "http" and parts.hostname in _LOCAL_HOSTS:
        return
    raise DatasetError(
        f"refusing to download {what}: only https:// (and file:// or http://127.0.0.1 as the "
        "URL asked for) are allowed"
    )


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to a URL that passes the same policy (:func:`_check_url`)."""

    def http_error_302(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any
    ) -> Any:
        location = headers.get("Location") or headers.get("URI")
        if location:  # checked before urllib's own scheme check, for the same one line
            _check_url(urllib.parse.urljoin(req.full_url, location), after=req.full_url)
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        _check_url(newurl, allow_file=False, after=req.full_url)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Deadline:
    """A watchdog over one download's sockets: at ``seconds`` it shuts every socket the
    download opened (and any it opens later), so that a read blocked anywhere (the status line,
    headers drip-fed a byte at a time, the body) fails at once; :attr:`expired` then tells
    the failure from a network error."""

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._cut)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _cut(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Tracked:
    """A connection whose socket, once connected, its download's :class:`_Deadline` watches."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self._deadline.track(self.sock)  # type: ignore[attr-defined]


class _TrackedHTTP(_Tracked, http.client.HTTPConnection):
    pass


class _TrackedHTTPS(_Tracked, http.client.HTTPSConnection):
    pass


class _DeadlineHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(functools.partial(_TrackedHTTP, deadline=self._deadline), req)


class _DeadlineHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> Any:
        connection = functools.partial(_TrackedHTTPS, deadline=self._deadline)
        return self.do_open(connection, req, context=self._context)


def _opener(deadline: _Deadline) -> urllib.request.OpenerDirector:
    """urllib's opener with the redirect policy and every connection under ``deadline``."""
    return urllib.request.build_opener(
        _CheckedRedirects, _DeadlineHTTP(deadline), _DeadlineHTTPS(deadline)
    )


def _stream(
    resp: Any, out: BinaryIO, digest: Any, url: str, limits: DownloadLimits, start: float
) -> tuple[int, int | None]:
    """Copy ``resp`` to ``out`` as bytes arrive, within ``limits``' deadline and size; return
    the bytes received and those the Content-Length header announced (None without one)."""
    length = resp.headers.get("Content-Length") if hasattr(resp, "headers") else None
    announced = int(length) if length is not None and length.isdigit() else None
    if announced is not None and announced > limits.max_bytes:
        raise DatasetError(
            f"refusing {url}: it announces {announced / 2**20:,.1f} MB, more than "
            f"download.max_mb = {limits.max_mb:g}"
        )
    read = getattr(resp, "read1", resp.read)
    total = 0
    while True:
        try:
            chunk = read(_CHUNK)
        except http.client.IncompleteRead as exc:  # read() of a body cut short
            return total + len(exc.partial), announced
        if not chunk:
            return total, announced
        total += len(chunk)
        if total > limits.max_bytes:
            raise DatasetError(
                f"refusing {url}: more than download.max_mb = {limits.max_mb:g} MB downloaded"
            )
        if time.monotonic() - start > limits.deadline:
            raise DatasetError(
                f"cannot download {url}: not done within download.deadline = "
                f"{limits.deadline:g} s ({total:,} bytes received)"
            )
        digest.update(chunk)
        out.write(chunk)


def download_file(
    url: str,
    dest: Path,
    *,
    sha256: str | None,
    timeout: float = 60,
    limits: DownloadLimits = _DEFAULT_LIMITS,
) -> Path:
    """Stream ``url`` to ``dest`` through a temp file beside it, verify, rename atomically.

    Every redirect passes the same URL policy; ``timeout`` bounds each read, ``limits`` the
    whole download's time and size: the deadline covers the connection, the status line and
    headers (however slowly they arrive) and the body (:class:`_Deadline`). On any failure
    (HTTP error, checksum mismatch, a limit) ``dest`` is not created.
    """
    _check_url(url)
    dest = Path(dest)
    digest = hashlib.sha256()
    start = time.monotonic()
    late = f"cannot download {url}: not done within download.deadline = {limits.deadline:g} s"
    with atomic_path(dest) as tmp, _Deadline(limits.deadline) as deadline:
        try:
            with (
                _opener(deadline).open(url, timeout=min(timeout, limits.deadline)) as resp,
                open(tmp, "wb") as out,
            ):
                received, announced = _stream(resp, out, digest, url, limits, start)
            if deadline.expired:  # a socket shut by the watchdog reads as the end of the data
                raise DatasetError(late)
            if announced is not None and received < announced:
                raise DatasetError(
                    f"cannot download {url}: the connection closed after {received:,} of the "
                    f"{announced:,} bytes it announced (truncated): run again"
                )
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            if isinstance(exc, DatasetError):
                raise
            if deadline.expired:
                raise DatasetError(late) from exc
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise DatasetError(f"cannot download {url}: {reason}") from exc
        got = digest.hexdigest()
        if sha256 is not None and got != sha256.lower():
            raise DatasetError(f"checksum mismatch for {url}: expected {sha256}, got {got}")
    return dest


# --------------------------------------------------------------------------- extraction


def _normalised(name: str) -> PurePosixPath:
    return PurePosixPath(posixpath.normpath(name.replace("\\", "/") or "."))


def _member_target(name: str) -> PurePosixPath:
    """Normalised relative path of an archive member; raise ``ValueError`` if it escapes."""
    norm = name.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        raise ValueError("absolute path")
    clean = posixpath.normpath(norm) if norm else "."
    if clean == ".." or clean.startswith("../"):
        raise ValueError("path escapes the target folder")
    return PurePosixPath(clean)


def _link_target(
    member: PurePosixPath, link: str, links: set[PurePosixPath], *, hard: bool
) -> None:
    """Raise ``ValueError`` if a link at ``member`` to ``link`` can leave the folder.

    The target is resolved component by component; it may neither climb above the
    folder nor pass through another symlink (whose real target could differ).
    """
    if link.startswith("/") or (len(link) > 1 and link[1] == ":"):
        raise ValueError(f"link to absolute path {link}")
    parts: list[str] = [] if hard else list(member.parent.parts)
    for comp in link.replace("\\", "/").split("/"):
        if comp in ("", "."):
            continue
        if parts and PurePosixPath(*parts) in links:
            raise ValueError(f"link to {link} goes through another link")
        if comp == "..":
            if not parts:
                raise ValueError(f"link to {link} escapes the target folder")
            parts.pop()
        else:
            parts.append(comp)


def _check_through_links(path: PurePosixPath, links: set[PurePosixPath]) -> None:
    if any(parent in links for parent in path.parents):
        raise ValueError("path goes through a link")


def _check_unique(path: PurePosixPath, seen: set[PurePosixPath]) -> None:
    if path in seen:
        raise ValueError("a second member of the same name (which one would be kept?)")
    seen.add(path)


def _check_size(total: int, archive: Path, limits: DownloadLimits) -> None:
    if total > limits.max_extracted_bytes:
        raise DatasetError(
            f"refusing {archive}: it expands to more than download.max_extracted_mb = "
            f"{limits.max_extracted_mb:g} MB"
        )


def _validate_tar(tf: tarfile.TarFile) -> None:
    members = tf.getmembers()
    links = {_normalised(m.name) for m in members if m.issym()}
    seen: set[PurePosixPath] = set()
    for m in members:
        try:
            path = _member_target(m.name)
            _check_unique(path, seen)
            _check_through_links(path, links)
            if (
                m.ischr()
                or m.isblk()
                or m.isfifo()
                or not (m.isfile() or m.isdir() or m.issym() or m.islnk())
            ):
                raise ValueError("device or special file")
            if m.issym() or m.islnk():
                _link_target(path, m.linkname, links, hard=m.islnk())
        except ValueError as exc:
            raise DatasetError(f"unsafe archive {tf.name}: member {m.name!r}: {exc}") from None


def _zip_is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def _validate_zip(zf: zipfile.ZipFile, archive: Path) -> None:
    infos = zf.infolist()
    links = {_normalised(i.filename) for i in infos if _zip_is_symlink(i)}
    seen: set[PurePosixPath] = set()
    for info in infos:
        try:
            path = _member_target(info.filename)
            _check_unique(path, seen)
            _check_through_links(path, links)
            kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip records no type
            if kind not in (0, stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
                raise ValueError("device or special file")
            if _zip_is_symlink(info):
                _link_target(path, zf.read(info).decode("utf-8"), links, hard=False)
        except ValueError as exc:
            msg = f"unsafe archive {archive}: member {info.filename!r}: {exc}"
            raise DatasetError(msg) from None


def _extract_zip(zf: zipfile.ZipFile, dest: Path, archive: Path, limits: DownloadLimits) -> None:
    written = 0
    for info in zf.infolist():
        target = dest / _member_target(info.filename)
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if _zip_is_symlink(info):
            os.symlink(zf.read(info).decode("utf-8"), target)
            continue
        with zf.open(info) as src, open(target, "wb") as out:
            while chunk := src.read(_CHUNK):  # counted: the sizes a zip declares may lie
                written += len(chunk)
                _check_size(written, archive, limits)
                out.write(chunk)


def safe_extract(archive: Path, dest: Path, *, limits: DownloadLimits = _DEFAULT_LIMITS) -> None:
    """Extract a zip or tar(.gz/.bz2/.xz) archive into ``dest``, refusing unsafe members.

    Every member is checked before anything is written: absolute paths, ``..`` escapes,
    two members of the same name, links pointing outside ``dest`` (or paths through
    links), device files and a total size above ``limits.max_extracted_mb`` raise a
    one-line :class:`DatasetError` naming the archive (and the member); so does a
    damaged archive, and a zip whose members expand beyond what they declare.
    """
    archive, dest = Path(archive), Path(dest)
    try:
        dest.mkdir(parents=True, exist_ok=True)
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                _validate_zip(zf, archive)
                _check_size(sum(i.file_size for i in zf.infolist()), archive, limits)
                _extract_zip(zf, dest, archive, limits)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tf:
                _validate_tar(tf)
                _check_size(sum(m.size for m in tf.getmembers() if m.isfile()), archive, limits)
                try:
                    tf.extractall(dest, filter="data")
                except tarfile.FilterError as exc:
                    member = exc.tarinfo.name if exc.tarinfo is not None else "?"
                    raise DatasetError(
                        f"unsafe archive {archive}: member {member!r}: {exc}"
                    ) from None
        else:
            raise DatasetError(f"{archive} is neither a zip nor a tar archive")
    except DatasetError:
        raise
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, zlib.error) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DatasetError(f"cannot extract {archive}: {reason}") from None


# --------------------------------------------------------------------------- fetch


def _source(name: str) -> DatasetSource:
    try:
        return SOURCES[name]
    except KeyError:
        known = ", ".join(sorted(SOURCES))
        raise DatasetError(f"unknown dataset {name!r}; known: {known}") from None


def _has_files(folder: Path, source: DatasetSource) -> bool:
    return all((folder / rel).is_file() for rel in source.files)


def _locate_root(extracted: Path, source: DatasetSource) -> Path:
    """The folder inside an extracted archive that holds ``source``'s files."""
    candidates = [extracted / source.archive_root, extracted]
    first = PurePosixPath(next(iter(source.files)))
    depth = len(first.parts)
    candidates += sorted(p.parents[depth - 1] for p in extracted.rglob(first.name))
    for folder in candidates:
        if _has_files(folder, source):
            return folder
    return extracted / source.archive_root


def what_to_do(name: str) -> str:
    """How a user supplies dataset ``name`` by hand: the mirror, ``sources.<name>.path`` or url."""
    return (
        f"put its files in <mirror>/{name}/ (mirror: the config key `mirror` or "
        f"${MIRROR_ENV}), or set sources.{name}.path to a folder or archive holding them, "
        f"or sources.{name}.url to another copy of the archive"
    )


def _as_folder(file: Path, source: DatasetSource, work: Path) -> Path:
    """A folder in ``work`` showing ``file`` under the name of ``source``'s one file
    (``archive: false``), as a link: the verified copy into place reads through it."""
    folder = work / "file"
    target = folder / next(iter(source.files))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(Path(file).resolve())
    return folder


def _user_folder(
    path: Path, source: DatasetSource, work: Path, limits: DownloadLimits = _DEFAULT_LIMITS
) -> Path:
    """Resolve a user-supplied ``path``: a folder with the files, or an archive."""
    if path.is_dir():
        nested = path / source.archive_root
        if source.archive_root and not _has_files(path, source) and _has_files(nested, source):
            return nested
        return path
    if path.is_file():
        if not source.archive:  # the dataset's one file itself
            return _as_folder(path, source, work)
        extracted = work / "extracted"
        safe_extract(path, extracted, limits=limits)
        return _locate_root(extracted, source)
    hint = f". {source.manual_instructions}" if source.manual_instructions else ""
    raise DatasetError(
        f"{source.name}: sources.{source.name}.path {path} does not exist; set it to a folder "
        f"or archive holding the dataset's files, or unset it{hint}"
    )


def _mirror_folder(mirror: Path | None, name: str, origin: str | None) -> Path | None:
    """``<mirror>/<name>/`` if it exists; a mirror that does not exist is an error naming it."""
    if mirror is None:
        env = os.environ.get(MIRROR_ENV, "").strip()
        mirror, origin = (Path(env), f"${MIRROR_ENV}") if env else (None, None)
    if mirror is None:
        return None
    if not mirror.is_dir():
        named = f" ({origin})" if origin else ""
        raise DatasetError(
            f"{name}: the dataset mirror {mirror}{named} does not exist or is not a folder; "
            "point it at the folder holding one subfolder per dataset, or unset it"
        )
    return mirror / name if (mirror / name).is_dir() else None


def _archive_name(url: str) -> str:
    """A safe local file name for the archive at ``url`` (its last path part, else "archive")."""
    name = PurePosixPath(urllib.parse.unquote(urllib.parse.urlsplit(url).path)).name
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        return "archive"
    return name[:200]


def _download(
    source: DatasetSource, url: str | None, work: Path, limits: DownloadLimits = _DEFAULT_LIMITS
) -> Path:
    url = url or source.url
    if url is None:
        raise DatasetError(f"{source.name}: no local copy found. {source.manual_instructions}")
    try:
        archive = download_file(
            url, work / _archive_name(url), sha256=source.archive_sha256, limits=limits
        )
        if not source.archive:  # the download is the dataset's one file
            return _as_folder(archive, source, work)
        extracted = work / "extracted"
        safe_extract(archive, extracted, limits=limits)
    except DatasetError as error:
        raise DatasetError(f"{source.name}: {error}; {what_to_do(source.name)}") from error
    return _locate_root(extracted, source)


def _check_present(source: DatasetSource, root: Path) -> None:
    missing = [rel for rel in source.files if not (root / rel).is_file()]
    if missing:
        what = "file" if len(missing) == 1 else "files"
        hint = f" {source.manual_instructions}" if source.manual_instructions else ""
        raise DatasetError(
            f"{source.name}: missing {what} {', '.join(missing)} (looked in {root}).{hint}"
        )


def _copy_verified(source: DatasetSource, root: Path, out: Path) -> None:
    _check_present(source, root)
    for rel, accepted in source.files.items():
        src, target = root / rel, out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        got = sha256_file(target)
        if accepted and got not in accepted:
            expected = " or ".join(accepted)
            raise DatasetError(
                f"{source.name}: checksum mismatch for {rel} (from {src}): "
                f"expected {expected}, got {got}; replace it with the canonical file, or "
                f"{what_to_do(source.name)}"
            )


def _staging_prefix(dest: Path) -> str:
    """Staging folders are ``.<name>.<host>-<pid>.<random>.tmp``: the next fetch on the same
    host removes those whose process is gone (killed before its cleanup ran)."""
    return f".{dest.name}.{os.uname().nodename}-{os.getpid()}."


def _remove_stale_staging(dest: Path) -> None:
    host = os.uname().nodename
    for folder in dest.parent.glob(f".{dest.name}.{host}-*.tmp"):
        pid = folder.name.removeprefix(f".{dest.name}.{host}-").split(".", 1)[0]
        if not pid.isdigit() or not folder.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue  # alive, as another user


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """Turn SIGTERM (a scheduler or Snakemake stopping the job) into ``SystemExit(143)`` while
    the body runs, so that its ``finally`` clauses remove the staging folder; SIGINT already
    raises ``KeyboardInterrupt``. Only in the main thread, where signal handlers live."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _move_into_place(built: Path, dest: Path, staging: Path) -> None:
    if dest.exists() or dest.is_symlink():
        old = staging / "old"
        os.replace(dest, old)
    os.replace(built, dest)


def fetch_dataset(
    name: str,
    dest: Path,
    *,
    mirror: Path | None = None,
    path: Path | None = None,
    url: str | None = None,
    mirror_origin: str | None = None,
    limits: DownloadLimits = _DEFAULT_LIMITS,
) -> Path:
    """Materialise dataset ``name``'s canonical files in folder ``dest``, atomically.

    Source priority: ``path`` (folder or archive), ``mirror/<name>/`` (``mirror``
    defaults to ``$DEBIASEVAL_MIRROR``), then ``url or source.url`` (downloaded and
    extracted safely). Files are copied, never linked, and every listed file is
    checked against its recorded SHA-256. A ``path`` or mirror that does not exist
    is an error (``mirror_origin`` says where the mirror was set, for the message);
    a mirror without the dataset's subfolder falls through to the download. Every
    failure is a one-line :class:`DatasetError` saying what to do; ``dest`` is then
    left as it was. ``limits`` bound a download and an extraction (:class:`DownloadLimits`).
    The staging folder beside ``dest`` is removed on failure, on SIGINT and SIGTERM, and
    otherwise (``kill -9``) by the next fetch on the same host.
    """
    source = _source(name)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(dest)
    with _terminate_as_exit():
        staging = Path(
            tempfile.mkdtemp(prefix=_staging_prefix(dest), suffix=".tmp", dir=dest.parent)
        )
        try:
            work = staging / "work"
            work.mkdir()
            if path is not None:
                root = _user_folder(Path(path), source, work, limits)
            else:
                root = _mirror_folder(None if mirror is None else Path(mirror), name, mirror_origin)
                if root is None:
                    root = _download(source, url, work, limits)
            built = staging / "out"
            built.mkdir()
            _copy_verified(source, root, built)
            _move_into_place(built, dest, staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return dest
