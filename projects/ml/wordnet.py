"""WordNet 3.0 from ``NLTK_DATA`` (Debian's ``wordnet-base``, put there by ``scripts/setup.sh``),
read once per process and never downloaded. No Django.

Every WordNet lookup of the project goes through :func:`english_wordnet` (the rules generator's
substitutions, rationale infilling, the pairwise classifier's antonym features) — except the
dashboard's noun categories, which read two lines of WordNet's files (:func:`noun_lexname`)
rather than build the reader in a web request. It is NLTK's ``WordNetCorpusReader`` without one
step of its loading: NLTK 3.10 maps the loaded WordNet onto the corpus named ``"wordnet"`` every
time (``map_wn`` compares the data's version, ``"3.0"``, with that name, which never match) by
reading ``index.sense`` twice, 3.2 of the 5.5 s a load takes on two cores. The mapping only serves the Open Multilingual
Wordnet, which the project does not read; English lookups (synsets, morphy, lemmas, antonyms,
lexnames) give the same answers without it (``tests/projects/test_wordnet.py`` checks them against
``nltk.corpus.wordnet``).
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_readers: dict[str, Any] = {}


def english_wordnet(nltk_data: str = "") -> Any:
    """The WordNet reader (one per data folder, built on first use). ``nltk_data`` (folders
    joined by ``os.pathsep``, as in ``NLTK_DATA``), when given, goes first on NLTK's search
    path. Raises ``LookupError``, as ``nltk.corpus.wordnet`` does, when no ``corpora/wordnet`` is
    found."""
    import os

    import nltk

    for folder in reversed([p for p in nltk_data.split(os.pathsep) if p]):
        if folder not in nltk.data.path:
            nltk.data.path.insert(0, folder)
    root = str(nltk.data.find("corpora/wordnet"))
    reader = _readers.get(root)
    if reader is not None:
        return reader
    with _lock:
        if root not in _readers:
            _readers[root] = _reader(root)
    return _readers[root]


def _reader(root: str) -> Any:
    from nltk.corpus.reader import CorpusReader
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.corpus.util import LazyCorpusLoader

    class EnglishWordNet(WordNetCorpusReader):  # type: ignore[misc]  # nltk is untyped
        def map_wn(self, version: str = "wordnet") -> None:
            return None  # the multilingual mapping: see the module docstring

    # the multilingual data stays reachable, lazily, as in nltk.corpus.wordnet (never read here)
    omw = LazyCorpusLoader("omw-2.0", CorpusReader, r".*/wn-data-.*\.tab", encoding="utf8")
    return EnglishWordNet(root, omw)


# -- one noun's lexicographer file, without loading WordNet ------------------------------------
# NLTK's reader reads every index and exception file when it is built (seconds: the dashboard of
# an image–caption project paid that in its first request). A noun's first sense and its
# lexicographer file need only two lines: its ``index.noun`` line (found by binary search, the
# file is sorted) and the ``data.noun`` line at its first offset. Noun morphology as NLTK's
# ``_morphy`` does it: the exception list, else one round of the detachment rules.
NOUN_SUBSTITUTIONS = (
    ("s", ""),
    ("ses", "s"),
    ("ves", "f"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
)
_noun_tables: dict[str, tuple[dict[str, list[str]], list[str]]] = {}


def _index_line(path: str, key: str) -> str | None:
    """The line of the sorted WordNet index file ``path`` whose first word is ``key``."""
    import os

    want = key.encode("utf-8")
    with open(path, "rb") as f:
        lo, hi = 0, os.path.getsize(path)
        while lo < hi:  # the first position whose next whole line's word is >= want
            mid = (lo + hi) // 2
            f.seek(mid)
            if mid:
                f.readline()
            line = f.readline()
            if line and line.split(b" ", 1)[0] < want:
                lo = mid + 1
            else:
                hi = mid
        f.seek(lo)
        if lo:
            f.readline()
        line = f.readline()
    return line.decode("utf-8") if line.split(b" ", 1)[0] == want else None


def _noun_offsets(root: str, lemma: str) -> list[int]:
    import os

    line = _index_line(os.path.join(root, "index.noun"), lemma)
    if line is None:
        return []
    parts = line.split()
    n_synsets = int(parts[2])
    return [int(o) for o in parts[len(parts) - n_synsets :]]


def _noun_morphy(root: str, form: str, exceptions: dict[str, list[str]]) -> list[str]:
    if form in exceptions:
        forms = exceptions[form]
    else:
        forms = [form[: -len(old)] + new for old, new in NOUN_SUBSTITUTIONS if form.endswith(old)]
    found: list[str] = []
    for f in [form, *forms]:
        if f not in found and _noun_offsets(root, f):
            found.append(f)
    return found


def _wordnet_folder(nltk_data: str) -> str | None:
    """WordNet's folder (with ``index.noun``) on ``nltk_data`` or ``NLTK_DATA``, found without
    importing NLTK (two seconds: it imports scipy) unless it is imported already or the data is
    elsewhere on its search path; None when WordNet is there only as a zip."""
    import os
    import sys

    folders = [*nltk_data.split(os.pathsep), *os.environ.get("NLTK_DATA", "").split(os.pathsep)]
    if "nltk" not in sys.modules:
        for folder in filter(None, folders):
            if os.path.isfile(os.path.join(folder, "corpora", "wordnet", "index.noun")):
                return os.path.join(folder, "corpora", "wordnet")
    import nltk

    for folder in reversed([p for p in nltk_data.split(os.pathsep) if p]):
        if folder not in nltk.data.path:
            nltk.data.path.insert(0, folder)
    root = str(nltk.data.find("corpora/wordnet"))
    return root if os.path.isfile(os.path.join(root, "index.noun")) else None


def noun_lexname(word: str, nltk_data: str = "") -> str | None:
    """The lexicographer file (``noun.animal``…) of ``word``'s first noun sense, as
    ``english_wordnet().synsets(word, "n")[0].lexname()`` gives it, in milliseconds and without
    building the reader; None when WordNet has no noun sense. ``LookupError`` without the data."""
    import os

    root = _wordnet_folder(nltk_data)
    if root is None:  # a zipped WordNet: the reader reads it
        synsets = english_wordnet(nltk_data).synsets(word.lower(), "n")
        return str(synsets[0].lexname()) if synsets else None
    tables = _noun_tables.get(root)
    if tables is None:
        with open(os.path.join(root, "noun.exc"), encoding="utf-8") as fp:
            exceptions = {t[0]: t[1:] for t in (line.split() for line in fp) if t}
        with open(os.path.join(root, "lexnames"), encoding="utf-8") as fp:
            names = [line.split()[1] for line in fp if line.strip()]
        tables = _noun_tables.setdefault(root, (exceptions, names))
    exceptions, names = tables
    for form in _noun_morphy(root, word.lower(), exceptions):
        with open(os.path.join(root, "data.noun"), "rb") as f:
            f.seek(_noun_offsets(root, form)[0])
            return names[int(f.readline().split()[1])]
    return None
