"""Writes for projects, originals and candidates. Modules: ``projects`` (projects, labels),
``candidates`` (state changes), ``imports`` / ``exports`` (data in and out), ``runs``
(generation jobs)."""
