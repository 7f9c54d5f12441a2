"""The words a counterfactual changed (annotate/kinds/changes.py), marked on the item page."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotate.kinds.changes import changed_segments


def _marked(text: str, other: str) -> list[str]:
    return [run for run, changed in changed_segments(text, other) if changed]


def test_an_inserted_word_is_marked_in_the_counterfactual_and_nothing_in_the_original() -> None:
    cf, orig = "A man is not sleeping on the couch.", "A man is sleeping on the couch."
    assert _marked(cf, orig) == ["not"]
    assert _marked(orig, cf) == []


def test_replaced_words_are_marked_on_both_sides_and_runs_join_with_their_spaces() -> None:
    assert _marked("The movie was really very bad", "The movie was good") == ["really very bad"]
    assert _marked("The movie was good", "The movie was really very bad") == ["good"]
    assert _marked("great and fun", "terrible and boring") == ["great", "fun"]


def test_chinese_is_compared_character_by_character() -> None:
    assert _marked("这部电影很好看", "这部电影很难看") == ["好"]


def test_punctuation_and_markup_are_tokens_like_words() -> None:
    assert _marked("Good!", "Good.") == ["!"]
    assert _marked("<b>bad</b> film", "<b>good</b> film") == ["bad"]


@pytest.mark.parametrize("text", ["", " ", "same", "  two  spaces  "])
def test_equal_texts_mark_nothing(text: str) -> None:
    assert changed_segments(text, text) == ([(text, False)] if text else [])


@given(st.text(), st.text())
def test_the_runs_give_the_text_back_exactly(text: str, other: str) -> None:
    runs = changed_segments(text, other)
    assert "".join(run for run, _ in runs) == text
    assert all(run for run, _ in runs)
    assert all(a[1] != b[1] for a, b in pairwise(runs))  # adjacent runs differ
