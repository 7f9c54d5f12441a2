"""Review-wide verdict flips (issue 31.2) on real review sentences: every verdict flips, what
is no verdict (narrative emotion, epithets of people, titles and songs, idioms) stays, a verdict
without a safe flip drops the candidate; the sentiment codes of the rules generator aim at a
label (the other one for the flip, the original's for delete / insert) and pool no single-sentence
flip of a multi-sentence review."""

from __future__ import annotations

import pytest

from generation.ml.base import GeneratedCandidate, Original
from generation.ml.rules import RulesGenerator, syntax
from generation.ml.rules import verdicts as V
from generation.ml.rules.tokens import apply_edits

pytestmark = pytest.mark.skipif(not syntax.available(), reason="spaCy's en_core_web_sm is not installed")


def flip(text: str, variant: int = 0) -> str | None:
    r = V.read_review(text, variant=variant)
    if r.blocked:
        return None
    return apply_edits(text, [(e.start, e.end, e.new) for e in r.edits])


def test_every_verdict_of_the_review_flips_together() -> None:
    text = "I loved Rolf in this role. The acting is great and the film is beautifully shot."
    assert flip(text) == "I hated Rolf in this role. The acting is terrible and the film is poorly shot."


def test_narrative_emotion_words_and_idioms_stay() -> None:
    text = (
        "The two fall in love during the difficult times in Israel, declaring their love for each other. "
        "The story is wonderful."
    )
    out = flip(text)
    assert out is not None
    assert "fall in love" in out and "difficult times" in out and "their love for each other" in out
    assert out.endswith("The story is dreadful.")
    left = dict(V.read_review(text).left)
    assert left["difficult"] == "idiom"


def test_epithets_of_people_and_quoted_songs_stay() -> None:
    text = 'The superb Tom Pettit sings Dylan\'s "Gorgeous Lady" at the end. A great movie.'
    out = flip(text)
    assert out == 'The superb Tom Pettit sings Dylan\'s "Gorgeous Lady" at the end. A terrible movie.'
    assert ("superb", "epithet") in V.read_review(text).left


def test_a_character_trait_is_no_verdict() -> None:
    text = "He plays a sad man who meets a cruel woman. The script is brilliant."
    assert flip(text) == "He plays a sad man who meets a cruel woman. The script is dull."


def test_idiom_pairs_ratings_and_negations() -> None:
    assert flip("The plot fails miserably. 3/10") == "The plot succeeds brilliantly. 8/10"
    assert flip("I didn't like it at all. The ending was not good.") == "I liked it. The ending was good."
    assert flip("This movie was good. I give it 10 stars.") == "This movie was bad. I give it 1 star."
    assert flip("It is a must-see. The cast is great.") == "It is one to skip. The cast is terrible."


def test_a_mixed_sentence_keeps_its_negations_and_flips_its_words() -> None:
    text = "It's not pretty bad, it's actually pretty good, though not great. I wanted to like the plot."
    assert (
        flip(text) == "It's not pretty good, it's actually pretty bad, though not terrible. I wanted to like the plot."
    )


def test_ratings_mirror_on_their_scale() -> None:
    for before, after in (
        ("8/10", "3/10"),
        ("10/10", "1/10"),
        ("4/5", "2/5"),
        ("7.5/10", "3.5/10"),
        ("2 out of 10", "9 out of 10"),
    ):
        m = V.RATING_RE.search(before)
        assert m is not None and V.rating_flip(m) == after


def test_a_verdict_without_a_safe_flip_drops_the_candidate() -> None:
    r = V.read_review("Don't waste your life on this film. The acting is great.")
    assert r.blocked and not r.edits
    assert V.read_review("A man walks into a bar.").blocked == "no verdict"


def test_the_second_variant_takes_the_next_opposite() -> None:
    text = "The acting is great. A good film."
    assert flip(text, 0) != flip(text, 1)
    assert flip(text, 1) == "The acting is awful. A poor film."


def _run(text: str, label: str, **opts: int) -> list[GeneratedCandidate]:
    o = Original("r1", {"text": text}, label, ("negative", "positive"), "sentiment")
    return [c for c in RulesGenerator(seed=0, **opts).generate([o]) if isinstance(c, GeneratedCandidate)]


def test_generator_pools_no_single_sentence_flip_of_a_long_review_and_sets_targets() -> None:
    text = (
        "I loved this movie. The acting is great and the story is very good. "
        "My family watched it twice and we all had a good laugh."
    )
    # the review flip of a text of several sentences is pooled when a run asks for it
    assert not [c for c in _run(text, "positive") if c.perturbation == "lexical"]
    cands = _run(text, "positive", review_flip_sentences=0)
    codes = {c.perturbation for c in cands}
    assert "negation" not in codes
    flips = [c for c in cands if c.perturbation == "lexical"]
    assert flips and all(c.target_label == "negative" for c in flips)
    assert "I hated this movie. The acting is terrible" in flips[0].fields["text"]
    assert all("loved" not in c.fields["text"] and "great" not in c.fields["text"] for c in flips)
    keeps = [c for c in cands if c.perturbation in ("delete", "insert")]
    assert keeps and all(c.target_label == "positive" for c in keeps)
    assert sum(c.perturbation == "delete" for c in cands) <= 1 and sum(c.perturbation == "insert" for c in cands) <= 1


def test_a_one_sentence_review_may_flip_by_negation() -> None:
    cands = _run("The movie is good.", "positive")
    assert {c.perturbation for c in cands} >= {"lexical"}
    assert all(c.target_label == "negative" for c in cands if c.perturbation in ("lexical", "negation"))
