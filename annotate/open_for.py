"""Which item may be served to which annotator: the one predicate (``OPEN_FOR``) and the
next-item pick built on it (issue 25: no annotator starved).

Plain SQL strings, no Django: the hot path (``annotate.services.hot_sql`` / ``assignments``)
runs the pick inside its claim, and the selectors run the same pick and the same predicate
read-only for "items left" and the researcher's pages, so what an annotator is told and what
next-item serves cannot disagree.
"""

from __future__ import annotations

# Which item next. Breadth-first and starvation-free, four probes tried in turn (COALESCE only
# runs a probe when the ones before it found nothing):
#   1. the best unseen item among the first WINDOW started items (most-taken first, then the
#      random key): finish what others started;
#   2. else a fresh item (taken = 0) by its random key;
#   3. else an unseen item among the FAR_WINDOW least-taken started items (the index walked
#      backwards): where someone raced ahead, leaving a trail of items at taken = 1, the
#      items the next annotators have not had are there;
#   4. else ANY started item this annotator has not had, with no window (most-taken first).
# All walk the partial index ``item_next_open`` (project, taken DESC, priority). 1 and 3 choose
# inside their window (a subquery) and read only the chosen item by primary key: written as
# ``i.id IN (window) ORDER BY … LIMIT 1`` PostgreSQL walked every open item in index order when
# this annotator had had the whole window (docs/annotation.md). 1–3 are
# bounded (64, 1 and 256 rows), so while fresh items remain the cost does not grow with the
# pool or with how many items this annotator already did. Probe 4 makes the pick complete
# (issue 25): before 3 and 4, an annotator whose window was full of items they had already
# answered got "nothing left" while started items outside it still wanted their answer. It
# runs only when 1–3 found nothing; its cost grows with the open items this annotator has had
# (measured in docs/annotation.md).
# ``OPEN_FOR`` is the one predicate "may be served to this annotator": the pick, "items left"
# (``ITEMS_LEFT``) and the selectors' ``next_item_for`` all use it, so they cannot disagree.
WINDOW = 64
FAR_WINDOW = 256
_NOT_SEEN = "NOT EXISTS (SELECT 1 FROM annotate_assignment a WHERE a.item_id = i.id AND a.annotator_id = %(uid)s)"
OPEN_FOR = "i.project_id = %(pid)s AND i.status = 'open' AND NOT i.is_gold AND i.taken < i.k AND " + _NOT_SEEN
# The same predicate for a walk that may pass many items this annotator had: the items they had
# are read once into a hash (NOT IN over their assignments on the project) instead of one index
# probe per row walked (a third of the buffers; measured in docs/annotation.md).
OPEN_FOR_ALL = (
    "i.project_id = %(pid)s AND i.status = 'open' AND NOT i.is_gold AND i.taken < i.k AND i.id NOT IN "
    "(SELECT a.item_id FROM annotate_assignment a WHERE a.annotator_id = %(uid)s AND a.project_id = %(pid)s)"
)


def _window_probe(order: str, size: str) -> str:
    """The best unseen item among the first ``size`` started items in ``order``: chosen inside
    the window, then read (and locked) by primary key, so the probe reads about ``size`` rows."""
    return (
        """
  (SELECT i.id FROM annotate_item i
   WHERE i.id = (
         SELECT w.id FROM (
               SELECT w.id, w.taken, w.priority FROM annotate_item w
               WHERE w.project_id = %(pid)s AND w.status = 'open' AND NOT w.is_gold
                 AND w.taken < w.k AND w.taken > 0
               ORDER BY """
        + order
        + " LIMIT "
        + size
        + """) w
         WHERE NOT EXISTS (SELECT 1 FROM annotate_assignment a WHERE a.item_id = w.id AND a.annotator_id = %(uid)s)
         ORDER BY """
        + order
        + """ LIMIT 1)
     AND """
        + OPEN_FOR
        + " {lock}),"
    )


_PICK = (
    """
SELECT COALESCE("""
    + _window_probe("w.taken DESC, w.priority", "{window}")
    + """
  (SELECT i.id FROM annotate_item i
   WHERE """
    + OPEN_FOR
    + """ AND i.taken = 0
   ORDER BY i.priority LIMIT 1 {lock}),
"""
    + _window_probe("w.taken ASC, w.priority DESC", "{far_window}")
    + """
  (SELECT i.id FROM annotate_item i
   WHERE """
    + OPEN_FOR_ALL
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
    return (
        _PICK_GOLD.format(lock=lock_sql)
        if gold
        else _PICK.format(lock=lock_sql, window=int(WINDOW), far_window=int(FAR_WINDOW))
    )
