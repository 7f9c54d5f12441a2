"""The project's WordNet reader (``projects.ml.wordnet``): NLTK's reader without its
multilingual mapping, which gives the same English answers as ``nltk.corpus.wordnet``."""

from __future__ import annotations

import pytest

from projects.ml.wordnet import english_wordnet, noun_lexname

nltk = pytest.importorskip("nltk")


def test_english_wordnet_answers_as_nltk_corpus_wordnet_does() -> None:
    from nltk.corpus import wordnet as wn

    ours = english_wordnet()
    assert ours is english_wordnet()  # read once per process
    assert ours.get_version() == "3.0" and ours.map30 is None
    words = ["good", "bad", "film", "run", "beautiful", "happy", "dog", "quickly", "hot", "men", "better", "lie"]
    for word in words:
        for pos in (None, "n", "v", "a", "r"):
            a, b = ours.synsets(word, pos), wn.synsets(word, pos)
            assert [s.name() for s in a] == [s.name() for s in b]
            assert [s.lexname() for s in a] == [s.lexname() for s in b]
            antonyms = [[x.name() for lem in s.lemmas() for x in lem.antonyms()] for s in a]
            assert antonyms == [[x.name() for lem in s.lemmas() for x in lem.antonyms()] for s in b]
        assert ours.morphy(word + "s") == wn.morphy(word + "s")
    assert ours.synsets("good", "a")[0].lemmas()[0].antonyms()[0].name() == "bad"


def test_a_folder_without_wordnet_is_a_lookup_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    with pytest.raises(LookupError):
        english_wordnet(str(tmp_path))


def test_noun_lexname_answers_as_the_reader_does() -> None:
    """``noun_lexname`` (a binary search in ``index.noun``, one line of ``data.noun``, NLTK's noun
    morphology) gives the first noun sense's lexicographer file that the loaded reader gives."""
    wn = english_wordnet()
    words = [
        "cat",
        "cats",
        "mice",
        "geese",
        "children",
        "women",
        "knives",
        "boxes",
        "dishes",
        "buses",
        "glasses",
        "cups",
        "ladies",
        "people",
        "data",
        "series",
        "hot_dog",
        "ice_cream",
        "u.s.",
        "'hood",
        "a",
        "1",
        "zebra",
        "aardvark",
        "zyzzyva",
        "qwzx",
        "runs",
        "men",
        "oxen",
        "teeth",
        "wolves",
    ]
    words += list(wn._exception_map["n"])[::40]  # every 40th irregular plural
    for word in words:
        synsets = wn.synsets(word, "n")
        assert noun_lexname(word) == (synsets[0].lexname() if synsets else None), word
