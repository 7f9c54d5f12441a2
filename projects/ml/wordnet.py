"""WordNet 3.0 from ``NLTK_DATA`` (Debian's ``wordnet-base``, put there by ``scripts/setup.sh``),
read once per process and never downloaded. No Django.

Every WordNet lookup of the project goes through :func:`english_wordnet` (the rules generator's
substitutions, rationale infilling, the pairwise classifier's antonym features, the dashboard's
noun categories). It is NLTK's ``WordNetCorpusReader`` without one step of its loading: NLTK
3.10 maps the loaded WordNet onto the corpus named ``"wordnet"`` every time (``map_wn`` compares
the data's version, ``"3.0"``, with that name, which never match) by reading ``index.sense``
twice, 3.2 of the 5.5 s a load takes on two cores. The mapping only serves the Open Multilingual
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
