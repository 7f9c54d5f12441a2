"""An upload handler that stops reading a request as soon as the upload passes the limit,
so an oversized upload is refused without being stored."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload


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
