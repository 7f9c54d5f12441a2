"""Issue 27: the invalid candidates of the dev fixture (tests/fixtures/generation-validity/),
one test per failure reason, with the real WordNet and POS tagger (and spaCy where the code
uses it): the bad output is no longer produced, and the good edits still are."""

from __future__ import annotations

import random

import pytest

from generation.ml import filters as F
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip
from generation.ml.rules import DEFAULT_CODES, TASK_CODES, RulesGenerator, sentiment_codes
from generation.ml.rules import polarity as pol
from generation.ml.rules import vocabulary as vocab
from generation.ml.rules.lexical_codes import Sentence
from generation.ml.rules.phrases import fix_tags
from generation.ml.rules.tokens import apply_edits, tag
from tests.generation.test_rules import outputs


def every_seed(code: str, text: str, seeds: int = 8) -> set[str]:
    out: set[str] = set()
    for seed in range(seeds):
        out |= outputs(code, text, seed)
    return out


# -- negation ------------------------------------------------------------------------------------
def test_negation_puts_no_no_inside_a_prepositional_phrase() -> None:
    out = every_seed("negation", "Mother catching her son in a pool.")
    assert not [o for o in out if "no pool" in o]
    out = every_seed("negation", "Man playing the oboe with the rest of a band.")
    assert not [o for o in out if "no band" in o]
    # issue 31.4: nor on the subject (1 of 22 blind-judged "No man is steering a large yacht" was valid)
    out = every_seed("negation", "A man is riding a bike.")
    assert "A man is not riding a bike." in out
    assert not [o for o in out if o.startswith("No ")]


def test_negation_leaves_subordinate_clauses_and_habits_alone() -> None:
    out = every_seed("negation", "People running holding hands because they are in love.")
    assert not [o for o in out if "are not in love" in o or "never in love" in o]
    out = every_seed("negation", "Two hikers walk along a path.")
    assert not [o for o in out if "never walk" in o or "rarely walk" in o]
    assert "Two hikers do not walk along a path." in out


# -- quantifier ----------------------------------------------------------------------------------
def test_quantifier_only_on_the_subject_and_with_agreement() -> None:
    out = every_seed("quantifier", "Two people are sitting under a tent while another stands.")
    assert not [o for o in out if "tents" in o]
    assert out & {"Several people are sitting under a tent while another stands."}
    out = every_seed("quantifier", "A redhead is wearing a hat as she speaks to her friends.")
    assert not [o for o in out if "redheads" in o]  # "she" still needs one redhead
    out = every_seed("quantifier", "There is a man walking.")
    assert not [o for o in out if "another" in o]


# -- lexical -------------------------------------------------------------------------------------
def test_lexical_is_sense_aware() -> None:
    out = every_seed("lexical", "Three people are kayaking in dark waters.")
    assert not [o for o in out if "blond" in o]
    out = every_seed("lexical", "Three young women pose for the camera at a parade.")
    assert not [o for o in out if " be " in o]  # no verb hypernyms
    out = every_seed("lexical", "A lot of children are playing hopscotch.")
    assert not [o for o in out if "bambinos" in o]
    out = every_seed("lexical", "A black cat sits on a wall.")
    assert not [o for o in out if "negroid" in o]
    assert "A white cat sits on a wall." in out  # the colour antonym stays


# -- resemantic ----------------------------------------------------------------------------------
def test_resemantic_keeps_the_verbs_frame() -> None:
    out = every_seed("resemantic", "A dog catching a Frisbee.")
    assert not [o for o in out if "jumping a" in o or "dancing a" in o]
    assert out & {"A dog throwing a Frisbee.", "A dog kicking a Frisbee."}
    out = every_seed("resemantic", "Someone who is lying down on the street.")
    assert not [o for o in out if "loving" in o]
    out = every_seed("resemantic", "People standing near trash bags outside.")
    assert not [o for o in out if "building near" in o]


def test_resemantic_nouns_stay_concrete_and_heads() -> None:
    out = every_seed("resemantic", "A boy with a basketball glowers at the camera.")
    assert not [o for o in out if "tennis" in o]
    out = every_seed("resemantic", "Two girls play behind music stands.")
    assert not [o for o in out if "music jumps" in o or "music cooks" in o]
    assert "Two boys play behind music stands." in out  # person counterpart
    out = every_seed("resemantic", "A construction man appears to be staring at a device.")
    assert not [o for o in out if "host" in o]


# -- insert --------------------------------------------------------------------------------------
def test_insert_adjectives_fit_and_no_dangling_phrase() -> None:
    out = every_seed("insert", "A kid is with a woman.", 20)
    assert not [o for o in out if " red kid" in o or " blue kid" in o]
    out = every_seed("insert", "The cat is white.", 20)
    assert not [o for o in out if "blue cat" in o or "in the morning" in o or "incredibly white" in o]
    out = every_seed("insert", "A man looks at vegetables on the back of a truck.", 20)
    assert not [o for o in out if "truck with a friend" in o]
    out = every_seed("insert", "The other stands near the fire.", 20)
    assert not [o for o in out if "loudly stands" in o or "ly stands" in o]


# -- delete --------------------------------------------------------------------------------------
def test_delete_leaves_predicates_antecedents_and_brackets() -> None:
    out = every_seed("delete", "A woman wearing a short skirt is on a crowded street.")
    assert not [o for o in out if o.endswith("is.")]
    out = every_seed("delete", "This man plays the tuba while Sousa instructs.")
    assert not [o for o in out if "tuba instructs" in o]
    out = every_seed("delete", "A man is standing in coconuts while trying to open one.")
    assert not [o for o in out if "standing while" in o]
    out = every_seed("delete", "A few people are displaying something on their face.")
    assert not [o for o in out if o.startswith("A people")]
    assert "A tall man walks in the park." in every_seed("delete", "A tall man walks slowly in the park.")


# -- restructure ---------------------------------------------------------------------------------
def test_restructure_fronts_only_place_and_time_and_keeps_pronouns_after_antecedents() -> None:
    assert not [o for o in every_seed("restructure", "A couple is looking for a house.") if o.startswith("For")]
    assert not [o for o in every_seed("restructure", "The man is marveling at the technology.") if o.startswith("At")]
    assert not [o for o in every_seed("restructure", "A woman raises her hand as she walks.") if o.startswith("Her")]
    out = every_seed("restructure", "A young boy chases away two geese.")
    assert not [o for o in out if o.startswith("Away")]
    assert "In the park, a man sits." in every_seed("restructure", "A man sits in the park.")


# -- artifacts filter ----------------------------------------------------------------------------
NLI = {"premise": "A boy with a tennis racket glowers at the camera.", "hypothesis": "The boy scowls."}


def test_artifacts_catch_dangling_words_lost_heads_and_broken_markup() -> None:
    def keep(orig: str, cand: str) -> bool:
        return F.artifacts({"premise": orig, "hypothesis": "x"}, {"premise": cand, "hypothesis": "x"}).keep

    assert not keep("A woman in a black swimming suit.", "A woman in a black swimming suit while.")
    assert not keep("People with instruments.", "People with instruments are.")
    assert not keep("A man walks a dog.", "A man walks a dog in the.")
    assert not keep(NLI["premise"], "A boy with a tennis glowers at the camera.")
    assert not keep("A man walks.", "A tall walks.")
    assert not keep("A man walks the dog.", "A man walks the the dog.")
    assert not keep("A man (in red) sits.", "A man (in red sits.")
    assert not F.artifacts(
        {"text": "Nice film.<br /><br />Crew is fine."}, {"text": "Nice film.<br /><br Crew is fine."}
    ).keep
    # good edits pass, and what the original already had is not the edit's fault
    assert keep("A man is standing.", "A man is standing up.")
    assert keep("The man walks a dog.", "The man walks a happy dog.")
    assert keep("What is he looking at?", "What is the boy looking at?")
    assert keep("Man walking with.", "Woman walking with.")


def test_malformations_name_the_pattern() -> None:
    assert F.introduced_malformations("A band with instruments.", "A band with instruments are.") == ["end:are"]
    assert F.introduced_malformations("A boy kicks a ball.", "A boy kicks a ball.") == []


# -- sentiment -----------------------------------------------------------------------------------
REVIEW = (
    "This movie was great and I loved the cast.<br /><br />The plot is not funny, but the acting is "
    "very good.<br /><br />Some randomly placed columns ride off as a set. It is boring."
)


def test_sentiment_edits_land_on_sentiment_words_and_never_in_markup() -> None:
    assert TASK_CODES["sentiment"] and set(TASK_CODES["sentiment"]) <= set(DEFAULT_CODES)
    o = Original("r1", {"text": REVIEW}, "positive", ("positive", "negative"), "sentiment")
    # the review flip on a review of several sentences is asked for (by default it is pooled on
    # texts of one sentence only)
    cands = [
        c for c in RulesGenerator(seed=0, review_flip_sentences=0).generate([o]) if isinstance(c, GeneratedCandidate)
    ]
    assert cands
    markup = pol.markup_spans(REVIEW)
    for c in cands:
        new = c.fields["text"]
        assert "columns ride off" in new  # a sentence without sentiment words is left alone
        if str(c.meta["detail"]).startswith("review flip"):
            # a sentence the flip leaves out may take its paragraph break along, never half a tag
            assert {new[a:b] for a, b in pol.markup_spans(new)} <= {"<br />"}, new
            continue
        assert new.count("<br /><br />") == REVIEW.count("<br /><br />"), new
        assert c.meta["removed"] or c.meta["introduced"], c.meta
        # every removed word carried sentiment, or was a negation / intensifier of one
        for w in c.meta["removed"]:
            assert pol.polarity(w) or w in ("not", "n't", "never", *sentiment_codes.INTENSIFIERS), (w, new)
        assert [new[a:b] for a, b in pol.markup_spans(new)] == [REVIEW[a:b] for a, b in markup], new
    flips = [c for c in cands if str(c.meta["detail"]).startswith("review flip")]
    assert flips
    flipped = flips[0].fields["text"]
    assert "terrible" in flipped and "hated" in flipped and "is funny" in flipped
    assert "very bad" in flipped and "not unfunny" not in flipped  # issue 31: every verdict, coherently
    # "It is boring." flips to "It is interesting.", which still argues the original's (positive)
    # side in a review that now reads negative: the coherent flip leaves that sentence out
    assert "It is interesting" not in flipped and "It is boring" not in flipped


def test_the_review_flip_is_pooled_on_one_sentence_unless_asked_for_longer() -> None:
    from generation.ml.rules import REVIEW_FLIP_SENTENCES

    assert REVIEW_FLIP_SENTENCES == 1
    o = Original("r1", {"text": REVIEW}, "positive", ("positive", "negative"), "sentiment")

    def flips(**opts: int) -> list[GeneratedCandidate]:
        out = [c for c in RulesGenerator(seed=0, **opts).generate([o]) if isinstance(c, GeneratedCandidate)]
        return [c for c in out if c.perturbation == "lexical"]

    # a review of four sentences: no word flip by default (what it leaves reads self-contradictory)
    assert flips() == [] and flips(review_flip_sentences=3) == []
    assert flips(review_flip_sentences=4) and flips(review_flip_sentences=0)
    one = Original(
        "s1", {"text": "A great cast and a moving story."}, "positive", ("positive", "negative"), "sentiment"
    )
    out = [c for c in RulesGenerator(seed=0).generate([one]) if isinstance(c, GeneratedCandidate)]
    flipped = [c for c in out if c.perturbation == "lexical"]
    assert flipped and all(c.target_label == "negative" for c in flipped)
    assert "terrible" in flipped[0].fields["text"] or "poor" in flipped[0].fields["text"]
    with pytest.raises(GeneratorConfigError, match="review_flip_sentences"):
        RulesGenerator(review_flip_sentences=-1)


def test_sentiment_never_edits_inside_broken_markup() -> None:
    text = "I loved it.<br /><br Crew is not an excuse and this movie is bad."
    sent = Sentence(text, fix_tags(tag(text)), 0, len(text))
    spans = pol.markup_spans(text)
    assert spans
    o = Original("r2", {"text": text}, "negative", ("positive", "negative"), "sentiment")
    for c in RulesGenerator(seed=1).generate([o]):
        assert isinstance(c, GeneratedCandidate)
        assert "<br /><br Crew" in c.fields["text"] or "<br /><br" in c.fields["text"]
    for p in sentiment_codes.lexical(sent, random.Random(0)):
        new = apply_edits(text, list(p.edits))
        assert "hated" in new and "good" in new


def test_polarity_lexicon_is_read_from_textblob() -> None:
    assert pol.polarity("great") > 0 > pol.polarity("boring")
    assert pol.polarity("table") == 0.0
    assert "terrible" in pol.opposites("great", "JJ") and "hated" in pol.opposites("loved", "VBD")


# -- issue 31.4: blind-judged failures of CAD-NLI dev candidates -----------------------------------
def nli_outputs(code: str, premise: str, hypothesis: str, seeds: int = 6) -> list[dict[str, str]]:
    out = []
    for seed in range(seeds):
        gen = RulesGenerator(seed=seed, codes=[code], max_per_code=50, max_negation=50, max_per_original=200)
        orig = Original("o1", {"premise": premise, "hypothesis": hypothesis}, "neutral", ("a", "b", "c"), "nli")
        res = gen.candidates_for(orig)
        if not isinstance(res, list):
            continue
        out += [dict(c.fields) for c in res]
    return out


def test_negation_is_added_to_a_hypothesis_only() -> None:
    premise, hypothesis = "A young puppy suckles from his mother.", "The puppy is sleeping."
    out = nli_outputs("negation", premise, hypothesis)
    assert out and all(f["premise"] == premise for f in out)  # a negated caption reads as no caption
    assert {"The puppy is not sleeping.", "The puppy isn't sleeping."} & {f["hypothesis"] for f in out}
    # a premise still loses a negation
    out = nli_outputs("negation", "A dog is not running.", "A dog sits.")
    assert "A dog is running." in {f["premise"] for f in out}


def test_negation_leaves_main_verb_do_alone() -> None:
    out = every_seed("negation", "A guy does stunts on a motorbike.")
    assert not [o for o in out if "does not stunts" in o or "doesn't stunts" in o]


def test_restructure_passive_subject_is_a_thing_or_a_being() -> None:
    out = every_seed("restructure", "A man takes a nap on the sidewalk.")
    assert not [o for o in out if o.startswith("A nap")]
    out = every_seed("restructure", "People are enjoying the sundown.")
    assert not [o for o in out if o.startswith("The sundown")]
    assert "A bike is being ridden by a man." in outputs("restructure", "A man is riding a bike.")


def test_restructure_fronts_no_clause_of_a_verbless_caption() -> None:
    out = every_seed("restructure", "People running holding hands because they are in love.")
    assert not [o for o in out if o.startswith("Because")]
    assert "While Sousa instructs, this man plays the tuba." in every_seed(
        "restructure", "This man plays the tuba while Sousa instructs."
    )


def test_insert_vocabulary_fits_the_noun_and_the_clause() -> None:
    out = every_seed("insert", "Three hockey players are in the middle of a play.", seeds=20)
    assert not [o for o in out if "empty middle" in o or "crowded middle" in o]
    out = every_seed("insert", "Skateboarder jumps off a cliff, performing a stunt.", seeds=20)
    assert not [o for o in out if any(f"{a} performing" in o for a in vocab.MANNER_ADVERBS)]
    out = every_seed("insert", "A man in a jacket rides a horse.", seeds=30)
    adjs = {w for o in out for w in o.split()} - set("A man in a jacket rides a horse.".split())
    assert adjs & set(vocab.ADJECTIVES["garment"]) and adjs & set(vocab.ADJECTIVES["mammal"])
    assert not adjs & {"furry", "fluffy"} - set(vocab.ADJECTIVES["mammal"])


def test_insert_phrases_only_where_the_sentence_says_no_time_or_place() -> None:
    out = every_seed("insert", "The sun is shining at night while a man runs.", seeds=20)
    assert not [o for o in out if any(o.rstrip(".").endswith(p) for p in vocab.TIME_PHRASES) and o.count("at ") > 1]
    out = every_seed("insert", "A man runs.", seeds=40)
    assert {o for o in out if o.rstrip(".").endswith(tuple(vocab.PLACE_PHRASES))}


def test_delete_keeps_phrases_that_go_on() -> None:
    out = every_seed("delete", "A young woman crouches on the banks of a river while washing dishes.")
    assert not [o for o in out if "crouches of a river" in o]
    out = every_seed("delete", "Two bicyclists in spandex and helmets in a race pedaling uphill.")
    assert not [o for o in out if "bicyclists and helmets" in o]


def test_quantifier_keeps_singular_attributes_singular() -> None:
    out = every_seed("quantifier", "A lady in a red sweatshirt opening a present.")
    assert not [o for o in out if "ladies in a red" in o]
    out = every_seed("quantifier", "Two women both in sandals are talking.")
    assert not [o for o in out if "both" in o and not o.startswith("Two")]
    out = every_seed("quantifier", "A man is riding a bike.")
    assert out and all(not o.startswith("One ") for o in out)


def test_lexical_keeps_age_nouns_and_possessives_sensible() -> None:
    out = every_seed("lexical", "A young boy is outdoors.")
    assert not [o for o in out if "old boy" in o]
    out = every_seed("lexical", "A man and his wife are relaxing outside.")
    assert not [o for o in out if "his woman" in o]


def test_resemantic_sisters_keep_their_sense_and_no_repeats() -> None:
    out = every_seed("resemantic", "The dog is wearing a dress.", seeds=12)
    assert not [o for o in out if " head" in o]
    out = every_seed("resemantic", "Three women and two men stand facing the ocean.", seeds=12)
    assert not [o for o in out if "Three men and two men" in o]


def test_resemantic_verbs_within_frame_and_object_category() -> None:
    out = every_seed("resemantic", "A woman hugs a child.", seeds=12)
    assert {"A woman greets a child.", "A woman kisses a child."} & out
    out = every_seed("resemantic", "A boy kicks a ball.", seeds=12)
    assert {"A boy throws a ball.", "A boy bounces a ball.", "A boy catches a ball."} & out
    assert not [o for o in out if "greets a ball" in o or "hugs a ball" in o]


def test_malformed_nli_originals_are_skipped() -> None:
    gen = RulesGenerator(seed=0)
    for premise in (
        "A older gentleman finds it humorous.",
        "A brown a dog and a black dog swim.",
        "Kids look a a bus.",
    ):
        orig = Original("o", {"premise": premise, "hypothesis": "A man sits."}, "neutral", ("a", "b", "c"), "nli")
        assert isinstance(gen.candidates_for(orig), Skip)
    ok = Original("o", {"premise": "An old man sits.", "hypothesis": "A man sits."}, "neutral", ("a", "b", "c"), "nli")
    assert isinstance(gen.candidates_for(ok), list)


def test_vocabulary_adjectives_by_the_nouns_category() -> None:
    assert vocab.category("jacket") == "garment" and "striped" in vocab.adjectives_for("jacket")
    assert vocab.category("shoes") == "garment"  # not WordNet's "shoes" of "in someone's shoes"
    assert vocab.category("guitar") == "instrument" and vocab.category("boat") == "vehicle"
    assert "furry" in vocab.adjectives_for("dog") and "furry" not in vocab.adjectives_for("fish")
    assert not {"old", "young", "elderly"} & set(vocab.adjectives_for("puppy"))
    assert not {"muscular", "elderly"} & set(vocab.adjectives_for("girl"))
    assert vocab.adjectives_for("table") == () and vocab.adjectives_for("middle") == ()
    assert vocab.category("people") == "person" and "crowded" in vocab.adjectives_for("market")
    assert vocab.says_when("The sun sets at dusk".split()) and not vocab.says_when("A man runs".split())
    assert vocab.says_where("A man runs in the park".split()) and not vocab.says_where("A man runs".split())


def test_resemantic_swaps_nouns_within_a_tight_class() -> None:
    out = every_seed("resemantic", "A man in a red shirt plays the guitar.", seeds=6)
    assert {"A man in a red jacket plays the guitar.", "A man in a red sweater plays the guitar."} & out or {
        "A man in a red shirt plays the violin.",
        "A man in a red shirt plays the cello.",
    } & out
    out = every_seed("resemantic", "Two boys in shorts ride bikes.", seeds=6)
    assert not [o for o in out if "shortss" in o or " a jeans" in o]
    assert {"Two boys in shorts ride scooters.", "Two boys in shorts ride motorcycles."} & out
    assert vocab.noun_swaps("table") == () and "jeans" in vocab.noun_swaps("shorts")
