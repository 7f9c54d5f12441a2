"""OpenAPI schema generation (drf-spectacular), project-wide.

``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]`` points here, so importing this module (which DRF does
before any view's schema is built) also registers the authentication extension below.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import build_bearer_security_scheme_object


class AutoSchema(SpectacularAutoSchema):
    """Component names for the nested ``InputSerializer``/``OutputSerializer`` of each API view.

    drf-spectacular names a component after the serializer class, so every view's nested
    ``InputSerializer`` would be the one component ``Input``. A serializer nested in a class is
    named after that class instead: ``AnnotationSubmitApi.InputSerializer`` →
    ``AnnotationSubmitInput``. An explicit ``extend_schema_serializer(component_name=…)`` still wins.
    """

    def get_serializer_name(self, serializer: Any, direction: Any) -> str:
        qualname = serializer.__class__.__qualname__
        outer, _, name = qualname.rpartition(".")
        if outer and "<locals>" not in outer:
            owner = outer.rpartition(".")[2]
            return owner.removesuffix("Api") + name
        return super().get_serializer_name(serializer, direction)


class FastTokenScheme(OpenApiAuthenticationExtension):
    """``projects.authentication.FastTokenAuthentication`` subclasses DRF's TokenAuthentication;
    without its own scheme both would claim the component name ``tokenAuth``."""

    target_class = "projects.authentication.FastTokenAuthentication"
    name = "fastTokenAuth"
    priority = 1  # before drf-spectacular's TokenScheme, which matches subclasses

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        scheme = build_bearer_security_scheme_object(header_name="Authorization", token_prefix=self.target.keyword)
        scheme["description"] = "The same API tokens as tokenAuth: `Authorization: Token <key>`."
        return scheme
