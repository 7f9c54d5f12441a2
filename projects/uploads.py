"""Upload handlers: one that stops reading a request as soon as the upload passes the limit
(so an oversized upload is refused without being stored), and one that streams an import's
upload to a file under the media root (never held in memory)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Collection
from typing import Any, NoReturn

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload

logger = logging.getLogger(__name__)


class UploadTooLarge(Exception):
    pass


class MaxSizeUploadHandler(FileUploadHandler):
    """Placed first in ``request.upload_handlers``; counts bytes across all files."""

    def __init__(self, request: Any = None, limit: int | None = None) -> None:
        super().__init__(request)
        self.limit = limit if limit is not None else settings.COUNTERPART["MAX_UPLOAD_BYTES"]
        self.received = 0
        self.exceeded = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.received > self.limit:
            self.exceeded = True
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


class ImportFileUploadHandler(FileUploadHandler):
    """Streams each uploaded file into a new file under ``MEDIA_ROOT/imports/`` (never into
    memory), for an import job to read later. Placed after :class:`MaxSizeUploadHandler`.

    The view owns the files: it hands them to an import job (which removes them when it
    ends) or calls :meth:`discard` (refused request, upload over the limit, bad fields).

    A file that cannot be stored (the disk is full, the folder is not writable) stops the upload
    instead of failing the request with a server error: the files written so far are removed at
    once, and :attr:`failure` says why, for the view to answer 507 with
    :func:`upload_store_message`."""

    def __init__(self, request: Any = None) -> None:
        super().__init__(request)
        self.paths: list[str] = []
        #: why an upload could not be stored (the OS's reason, e.g. "No space left on device")
        self.failure = ""

    def _fail(self, exc: OSError) -> NoReturn:
        logger.error("an upload could not be stored under MEDIA_ROOT/imports: %s", exc)
        self.failure = exc.strerror or type(exc).__name__
        self.discard()
        raise StopUpload(connection_reset=False) from exc  # the rest of the body is read, unstored

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        from projects.services.import_jobs import import_upload_path

        super().new_file(*args, **kwargs)
        try:
            path = import_upload_path(self.file_name or "")
            # Readable by this user only (the worker runs as the same user): a web server that
            # serves MEDIA_ROOT cannot hand an upload out even if its folder is not excluded.
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            self._fail(exc)
        self.paths.append(str(path))
        self.file = StoredUpload(
            open(fd, "w+b"),  # noqa: SIM115 - closed by the request (or discard)
            path=str(path),
            name=self.file_name,
            content_type=self.content_type,
            charset=self.charset,
            content_type_extra=self.content_type_extra,
        )

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        try:
            self.file.write(raw_data)
        except OSError as exc:
            self._fail(exc)
        return None

    def file_complete(self, file_size: int) -> UploadedFile:
        try:
            self.file.flush()
        except OSError as exc:
            self._fail(exc)
        self.file.seek(0)
        self.file.size = file_size
        return self.file

    def upload_interrupted(self) -> None:
        self.discard()

    def discard(self, keep: Collection[str] = ()) -> None:
        """Remove the stored files (all but those in ``keep``, handed to a job)."""
        if hasattr(self, "file"):
            with contextlib.suppress(OSError):  # closing flushes: on a full disk that fails again
                self.file.close()
        for path in self.paths:
            if path not in keep:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)


def upload_store_message(failure: str) -> str:
    """What the import page and the API answer (507) when an upload could not be stored."""
    return (
        f"upload refused: the server could not store the file ({failure}); nothing was imported. "
        "Try again later, and tell whoever runs this server if it lasts"
    )


class StoredUpload(UploadedFile):
    """An upload stored as a file of its own under the media root (``stored_path``)."""

    def __init__(self, file: Any, *, path: str, **kwargs: Any) -> None:
        super().__init__(file, size=0, **kwargs)
        self.stored_path = path


def stored_path(upload: Any) -> str:
    """Where :class:`ImportFileUploadHandler` stored ``upload`` (the only handler of an import
    request, so every file of one is a :class:`StoredUpload`)."""
    if not isinstance(upload, StoredUpload):
        raise TypeError(f"{type(upload).__name__} is not an upload stored under the media root")
    return upload.stored_path
