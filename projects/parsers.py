"""Request parsers for the REST API (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, with a body nested too deeply for Python's JSON decoder (100,000
    ``[``: ``RecursionError``) answered as a 400 like any other malformed JSON, not a 500."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
