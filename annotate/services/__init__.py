"""Writes of the annotation workflow.

* ``routing``: ``project_route`` (pick the human share, create items, inject gold),
  ``project_add_annotators``.
* ``assignments``: ``assignment_next``, ``annotation_submit``, ``assignment_skip``,
  ``annotation_undo``, ``assignment_heartbeat``, ``assignments_expire``.
* ``quality``: aggregation at item completion (majority vote + plurality policy), gold
  bookkeeping, qualification and flags.
"""
