"""The chat blank-filling helpers of ``llm-prompt`` (``generation/ml/chat_fill.py``): where a
pre-filled answer re-joins the text after the blank, copies of the demonstrations, the turns."""

from __future__ import annotations

from generation.ml.chat_fill import chat_messages, copies_demo, join_fill, rest_fill, sentence_around


def test_join_fill_takes_the_text_before_the_suffix_rejoins() -> None:
    assert join_fill(" boring and the plot kept me hooked.", " and the plot kept me hooked.", 5) == "boring"
    # "and the" found: the fill is what comes before it, case-insensitively
    assert join_fill(" Quite dull AND THE plot", " and the plot", 5) == "Quite dull"
    # the first suffix word alone when the model changed the second
    assert join_fill(" loved this book in 1990.", " this in 1990.", 5) == "loved"
    # a suffix starting with punctuation: the first clause, no dangling conjunction
    assert join_fill(" quite uninteresting and the second half", ", the second half one", 6) == "quite uninteresting"
    assert join_fill(' Pulp Fiction." and more', '."', 5) == "Pulp Fiction"
    # never re-joins, too long, or empty: no fill
    assert join_fill(" impossible.", " imaginable.", 5) is None
    assert join_fill(" a b c d e f g and the plot", " and the plot", 3) is None
    assert join_fill(" and the plot", " and the plot", 3) is None
    assert join_fill(" great\nand the plot", " and the plot", 3) is None  # first line only
    # a word boundary: "the" inside "there" is no re-join
    assert join_fill(" there was the end", " the end", 5) == "there was"


def test_copies_demo_and_messages() -> None:
    assert copies_demo("I loved this book from start")
    assert not copies_demo("great acting") and not copies_demo("a truly great film")
    msgs = chat_messages("sentiment", "negative", "The acting was [blank].", None)
    assert msgs[0]["role"] == "system" and "negative" in msgs[0]["content"]
    assert [m["role"] for m in msgs[1:]] == ["user", "assistant", "user", "assistant", "user"]
    assert msgs[-1]["content"].endswith("The acting was [blank].") and "[blank]" not in msgs[2]["content"]
    nli = chat_messages("nli", "false", "A man [blank] outside.", "A man sleeps.")
    assert "Hypothesis: A man sleeps." in nli[-1]["content"]
    assert sentence_around("One. Two three.", 5, 8, [(0, 4), (5, 15)]) == (5, 15)
    assert sentence_around("One.", 0, 2, []) == (0, 4)


def test_rest_fill_is_a_new_end_of_the_sentence() -> None:
    # never re-joins " by how bad this movie is." but ends the sentence: the new rest of it
    assert rest_fill(" the most tedious experience imaginable. And", " by how bad this movie is.", 10) == (
        "the most tedious experience imaginable."
    )
    assert rest_fill(' a "classic!" she said', " a mess.", 6) == 'a "classic!"'
    assert rest_fill(" a film that never ends", " a mess.", 10) is None  # no end of sentence
    assert rest_fill(" one two three four five six.", " a mess.", 4) is None  # too long
    assert rest_fill(" a mess.", " a mess.", 4) is None  # the old rest: nothing filled
    assert rest_fill(" .", " a mess.", 4) is None  # no word
    assert rest_fill("\nthe end.", " a mess.", 4) is None  # first line only


def test_copies_demo_catches_demonstration_topics_and_words() -> None:
    assert copies_demo("The book turned out perfectly", "A film about war.")  # a demo topic
    assert copies_demo("I hate this book", "I saw this film.")
    assert not copies_demo("the book was better", "The film is based on a book.")  # the text's own topic
    assert not copies_demo("the food was good", "the food was bad and the wine sour")  # its own words
    assert copies_demo("cold and bland, the food", "A film.")
    assert not copies_demo("a wonderful gift", "A film.")
