"""Uploaded files onto disk: sanitised unique names, zips unpacked safely, limits enforced."""

from __future__ import annotations

import os
import re
import unicodedata
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from app.settings import Settings

_CHUNK = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")
_MAX_NAME = 100


class UploadError(Exception):
    """The upload cannot be taken as a whole (a broken zip); the request is refused (400)."""

    status = 400


class UploadTooLarge(UploadError):
    """The upload breaks a size or count limit; the whole request is refused (413)."""

    status = 413


class UploadFolderFull(UploadError):
    """The upload folder would pass `api_upload_dir_max_mb`; the request is refused (507)."""

    status = 507


@dataclass(frozen=True)
class UploadLimits:
    max_total_bytes: int
    max_file_bytes: int
    max_files: int
    room_bytes: int | None = None  # what the upload folder may still take, in all

    @classmethod
    def from_settings(cls, settings: Settings) -> UploadLimits:
        """The limits, with the upload folder's room as it is now (the folder is measured)."""
        cap = int(settings.api_upload_dir_max_mb * 2**20)
        return cls(
            int(settings.api_max_upload_mb * 2**20),
            int(settings.api_max_file_mb * 2**20),
            settings.api_max_files_per_job,
            max(0, cap - folder_bytes(Path(settings.upload_dir))),
        )


def folder_bytes(root: Path) -> int:
    """The bytes of every regular file under `root` (0 when it does not exist)."""
    total, folders = 0, [root]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:  # gone, or not a folder: nothing of it counts
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


def safe_part(name: str) -> str:
    """One path component that cannot climb out of a folder or hide: `../x` -> `x`."""
    text = unicodedata.normalize("NFKC", name)
    text = _UNSAFE.sub("_", text).strip(" .")
    return text[:_MAX_NAME] or "file"


def document_name(raw: str) -> str:
    """A flat document name from an uploaded path (`a/b.pdf` -> `a__b`), without `.pdf`."""
    parts = [safe_part(p) for p in re.split(r"[\\/]+", raw) if p.strip(" .")]
    if not parts:
        return "file"
    last = parts[-1]
    if last.lower().endswith(".pdf") and len(last) > 4:
        parts[-1] = last[:-4]
    return "__".join(parts)


@dataclass
class UploadFolder:
    """A job's upload folder: every file gets a unique name, and the totals are counted."""

    root: Path
    limits: UploadLimits
    files: list[tuple[Path, str]] = field(default_factory=list)
    total_bytes: int = 0
    _names: set[str] = field(default_factory=set)

    def add(self, raw_name: str, stream: IO[bytes]) -> None:
        """Copy `stream` in under a sanitised name; a zip is unpacked into its members."""
        path, name = self._reserve(raw_name)
        self._copy(stream, path, raw_name)
        if _is_zip(path):
            try:
                self._unpack(path)
            finally:
                path.unlink()
            return
        self.files.append((path, name))

    def _reserve(self, raw_name: str) -> tuple[Path, str]:
        if len(self.files) >= self.limits.max_files:
            raise UploadTooLarge(f"more than {self.limits.max_files} files in one job")
        base = document_name(raw_name)
        name, n = base, 1
        while name.lower() in self._names:
            n += 1
            name = f"{base}-{n}"
        self._names.add(name.lower())
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / f"{name}.pdf", name

    def _copy(self, stream: IO[bytes], path: Path, raw_name: str) -> None:
        written = 0
        with path.open("xb") as out:
            while chunk := stream.read(_CHUNK):
                written += len(chunk)
                self.total_bytes += len(chunk)
                self._check(written, raw_name)
                out.write(chunk)

    def _check(self, written: int, raw_name: str) -> None:
        if written > self.limits.max_file_bytes:
            mib = self.limits.max_file_bytes / 2**20
            raise UploadTooLarge(f"{safe_part(raw_name)!r} is larger than {mib:g} MiB")
        if self.total_bytes > self.limits.max_total_bytes:
            mib = self.limits.max_total_bytes / 2**20
            raise UploadTooLarge(f"the upload unpacks to more than {mib:g} MiB")
        if self.limits.room_bytes is not None and self.total_bytes > self.limits.room_bytes:
            raise UploadFolderFull("the server's upload folder is full; try again later")

    def _unpack(self, archive: Path) -> None:
        # Member names only ever become sanitised flat names (no zip slip); sizes are counted
        # as bytes come out, not taken from the headers, so a zip bomb stops at the limit.
        self._names.discard(archive.stem.lower())
        try:
            with zipfile.ZipFile(archive) as zipped:
                for member in _members(zipped.infolist()):
                    path, _name = self._reserve(member.filename)
                    with zipped.open(member) as stream:
                        self._copy(stream, path, member.filename)
                    self.files.append((path, _name))
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            zlib.error,
            NotImplementedError,
            RuntimeError,
        ) as exc:
            # RuntimeError: an encrypted member; NotImplementedError: an unknown compression.
            raise UploadError(f"cannot unpack zip: {exc}") from exc


def _members(infos: Iterable[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    # Not `ZipInfo.is_dir()`: it indexes the name's last character, and a member may have none
    # (such a member is a file named `file`).
    return [
        i for i in infos if not i.filename.endswith("/") and not i.filename.startswith("__MACOSX/")
    ]


def _is_zip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"PK\x03\x04"
