"""Which item may be served to which annotator: the one predicate (``OPEN_FOR``) and the
next-item pick built on it (issue 25: no annotator starved).

Plain SQL strings, no Django: the hot path (``annotate.services.hot_sql`` / ``assignments``)
runs the pick inside its claim, and the selectors run the same pick and the same predicate
read-only for "items left" and the researcher's pages, so what an annotator is told and what
next-item serves cannot disagree.
"""

from __future__ import annotations

# Which item next. Breadth-first and starvation-free, three probes tried in turn (COALESCE
# only runs a probe when the ones before it found nothing):
#   1. the best unseen item among the first WINDOW started items (most-taken first, then the
#      random key): finish what others started;
#   2. else a fresh item (taken = 0) by its random key;
#   3. else ANY started item this annotator has not had, in the same order, with no window.
# All three walk the partial index ``item_next_open`` (project, taken DESC, priority). 1 and 2
# stop after a bounded number of rows, so while fresh items remain the cost does not grow with
# the pool or with how many items this annotator already did. Probe 3 is what makes the pick
# complete (issue 25): without it, an annotator whose window was full of items they had
# already answered (someone else raced ahead, leaving many items at taken = 1) got "nothing
# left" while started items outside the window still wanted their answer. It only runs once no
# fresh item is left, and then walks at most the open started items this annotator has had.
# ``OPEN_FOR`` is the one predicate "may be served to this annotator": the pick, "items left"
# (``ITEMS_LEFT``) and the selectors' ``next_item_for`` all use it, so they cannot disagree.
WINDOW = 64
_NOT_SEEN = "NOT EXISTS (SELECT 1 FROM annotate_assignment a WHERE a.item_id = i.id AND a.annotator_id = %(uid)s)"
OPEN_FOR = "i.project_id = %(pid)s AND i.status = 'open' AND NOT i.is_gold AND i.taken < i.k AND " + _NOT_SEEN
_PICK = (
    """
SELECT COALESCE(
  (SELECT i.id FROM annotate_item i
   WHERE i.id IN (
         SELECT w.id FROM annotate_item w
         WHERE w.project_id = %(pid)s AND w.status = 'open' AND NOT w.is_gold
           AND w.taken < w.k AND w.taken > 0
         ORDER BY w.taken DESC, w.priority LIMIT {window})
     AND """
    + OPEN_FOR
    + """
   ORDER BY i.taken DESC, i.priority LIMIT 1 {lock}),
  (SELECT i.id FROM annotate_item i
   WHERE """
    + OPEN_FOR
    + """ AND i.taken = 0
   ORDER BY i.priority LIMIT 1 {lock}),
  (SELECT i.id FROM annotate_item i
   WHERE """
    + OPEN_FOR
    + """ AND i.taken > 0
   ORDER BY i.taken DESC, i.priority LIMIT 1 {lock})
) AS id
"""
)
# How many items ``OPEN_FOR`` this annotator (capped: an index range, however large the pool).
ITEMS_LEFT = "SELECT COUNT(*) FROM (SELECT 1 FROM annotate_item i WHERE " + OPEN_FOR + " LIMIT %(cap)s) n"
# Gold items never close (every annotator may see each once): random key order.
_PICK_GOLD = (
    """
SELECT i.id FROM annotate_item i
WHERE i.project_id = %(pid)s AND i.status = 'open' AND i.is_gold AND i.taken < i.k AND """
    + _NOT_SEEN
    + """
ORDER BY i.priority LIMIT 1 {lock}
"""
)


def pick_sql(*, gold: bool, lock: bool) -> str:
    """The pick as SQL (params ``pid``, ``uid``); ``lock``: ``FOR UPDATE SKIP LOCKED``."""
    lock_sql = "FOR UPDATE SKIP LOCKED" if lock else ""
    return _PICK_GOLD.format(lock=lock_sql) if gold else _PICK.format(lock=lock_sql, window=int(WINDOW))
