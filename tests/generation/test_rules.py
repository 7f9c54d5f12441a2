"""The offline `rules` generator: one test per control code on hand-written sentences (the
exact edit is asserted), then the generator's contract (determinism, caps, fields, skips,
laziness) and, marked slow, the targets on CAD dev."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pytest

from generation.ml import lexicons as lx
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip
from generation.ml.rules import CODES, DEFAULT_CODES, PERTURBATIONS, RulesGenerator
from generation.ml.rules import vocabulary as vocab
from generation.ml.rules import wordnet as wnx
from generation.ml.rules.lexical_codes import Sentence
from generation.ml.rules.phrases import fix_tags, inflect
from generation.ml.rules.tokens import apply_edits, sentence_spans, tag, words

NLI_LABELS = ("entailment", "neutral", "contradiction")


def outputs(code: str, text: str, seed: int = 0) -> set[str]:
    sent = Sentence(text, fix_tags(tag(text)), 0, len(text))
    return {apply_edits(text, list(p.edits)) for p in PERTURBATIONS[code](sent, random.Random(seed))}


def nli(id_: str, premise: str, hypothesis: str) -> Original:
    return Original(id_, {"premise": premise, "hypothesis": hypothesis}, "neutral", NLI_LABELS, "nli")


# -- tokens ------------------------------------------------------------------------------------
def test_tokenizer_splits_contractions_and_keeps_offsets() -> None:
    toks = tag("He didn't go, can't he?")
    assert [t.text for t in toks] == ["He", "did", "n't", "go", ",", "ca", "n't", "he", "?"]
    assert all("He didn't go, can't he?"[t.start : t.end] == t.text for t in toks)


def test_sentence_spans_skip_markup() -> None:
    text = "Great film.<br /><br />The plot is thin. I laughed a lot!"
    assert [text[s:e] for s, e in sentence_spans(text)] == ["Great film.", "The plot is thin.", "I laughed a lot!"]


# -- the eight codes ---------------------------------------------------------------------------
def test_negation_inserts_with_varied_forms() -> None:
    out = outputs("negation", "A man is riding a bike.") | outputs("negation", "A man is riding a bike.", 1)
    assert "A man is not riding a bike." in out
    # issue 31.4: no "no longer" and no subject "no" (blind-judged: 24 of 29 and 1 of 22 valid)
    assert not [o for o in out if "no longer" in o or o.startswith("No ")]
    # issue 27: "never" / "rarely" turn a scene into a habit ("Two hikers never walk along a path")
    assert not [o for o in out if " never " in o or " rarely " in o]


def test_negation_do_support_for_plain_verbs() -> None:
    assert "The boy does not kick the ball." in outputs("negation", "The boy kicks the ball.")


def test_negation_removes_existing_negation() -> None:
    assert outputs("negation", "The dog doesn't bark.") == {"The dog does bark."}
    assert outputs("negation", "The cat is not asleep.") == {"The cat is asleep."}
    assert outputs("negation", "Nobody likes the movie.") <= {
        "Somebody likes the movie.",
        "Everybody likes the movie.",
        "Someone likes the movie.",
    }
    assert outputs("negation", "He never smiles.") <= {"He always smiles.", "He often smiles.", "He sometimes smiles."}


def test_quantifier_changes_determiner_number_and_agreement() -> None:
    out = outputs("quantifier", "A man is riding a bike.")
    assert "Two men are riding a bike." in out  # plural noun and verb agreement follow
    assert "One man is riding a bike." not in out  # issue 31.4: "a" -> "one" changed nothing a reader sees
    # issue 27: the subject only, and no "every"/"each"/"another"/"a single" ("There is another
    # man walking", "drives many cars" were invalid)
    assert "A man is riding two bikes." not in out
    assert not [o for o in out if o.split()[0] in ("Every", "Each", "Another") or "single" in o]


def test_quantifier_swaps_quantifiers_and_numbers() -> None:
    assert outputs("quantifier", "Some dogs run in the park.") & {
        "All dogs run in the park.",
        "Many dogs run in the park.",
        "Few dogs run in the park.",
        "Several dogs run in the park.",
        "Most dogs run in the park.",
        "Two dogs run in the park.",
        "Three dogs run in the park.",
        "Four dogs run in the park.",
        "Five dogs run in the park.",
    }
    assert "There are 4 cats on the sofa." in outputs("quantifier", "There are 3 cats on the sofa.")
    assert outputs("quantifier", "Dogs run in the park.") & {
        "All dogs run in the park.",
        "Two dogs run in the park.",
        "Some dogs run in the park.",
        "Many dogs run in the park.",
    }


def test_lexical_uses_wordnet_antonyms() -> None:
    assert "short" in wnx.antonyms("tall", "a")
    assert "It is short." in outputs("lexical", "It is tall.")


def test_lexical_uses_frequent_hypernyms_of_people_and_plain_adjective_pairs() -> None:
    # issue 27: no hyponyms ("man" -> "sir", "boat" -> "barge"); hypernyms of people and animals
    # attested 10 times in SemCor ("girl" -> "woman"); adjectives from plain pairs
    out = outputs("lexical", "The girl is tired.")
    assert "The woman is tired." in out
    assert not [o for o in every_word(out) if o in set(wnx.hyponyms("girl", "n"))]
    for o in out:  # one word changed, everything else kept
        assert len(set(o.split()) ^ set("The girl is tired.".split())) <= 2
    assert "The water is hot." in outputs("lexical", "The water is cold.")
    assert not outputs("lexical", "A man sits in a boat.") & {"A man sits in a barge.", "A sir sits in a boat."}


def every_word(texts: set[str]) -> set[str]:
    return {w.strip(".").lower() for t in texts for w in t.split()}


def test_quantifier_puts_no_universal_quantifier_inside_a_prepositional_phrase() -> None:
    for seed in range(10):
        out = outputs("quantifier", "A man works under the engine of a train.", seed)
        assert out
        for o in out:
            assert not any(f"of {q} train" in o for q in ("every", "each", "all")), o
        # the subject still gets a quantifier, the prepositional phrase none
        near = outputs("quantifier", "A man works near a train.", seed)
        assert "Two men work near a train." in near
        assert all(o.endswith("near a train.") for o in near), near


def test_resemantic_swaps_in_attested_sister_terms_only() -> None:
    assert wnx.attested("couch", "n") and not wnx.attested("spectroscope", "n")
    for seed in range(10):
        for o in outputs("resemantic", "A woman is standing near the water.", seed):
            verbs = {inflect(v, "VBG") for _, vs, _ in vocab.VERB_CLASSES for v in vs}
            new = set(o.rstrip(".").lower().split()) - set("a an woman is standing near the water".split()) - verbs
            for w in new - set(vocab.adjectives_for("water")):  # the swapped noun (and maybe its adjective)
                assert wnx.attested(wnx.lemma(w, "n"), "n"), o


def test_lexical_hypernyms_come_from_the_first_sense_only() -> None:
    # "guy" -> "effigy" goes through WordNet's second sense of "guy" (a Guy Fawkes effigy)
    assert "effigy" in wnx.hypernyms("guy", "n", 2)
    assert "effigy" not in wnx.hypernyms("guy", "n", 1)
    for seed in range(10):
        for o in outputs("lexical", "Two guys are exhausted after the game.", seed):
            assert "effigies" not in o, o


def test_adjective_fits_its_noun() -> None:
    assert wnx.animacy("woman") == "animate" and wnx.animacy("dog") == "animate"
    assert wnx.animacy("sandals") == "inanimate" and wnx.animacy("box") == "inanimate"
    assert wnx.animacy("qwxzv") is None
    assert wnx.adjective_fits("elderly", "woman") and not wnx.adjective_fits("elderly", "sandals")
    assert wnx.adjective_fits("wooden", "box") and not wnx.adjective_fits("wooden", "dog")
    assert not wnx.adjective_fits("elderly", "girl")  # the noun already says the age
    # issue 27: by the noun's lexicographer file ("a red kid", "loud grass", "a dry microphone")
    assert wnx.adjective_fits("red", "car") and not wnx.adjective_fits("red", "kid")
    assert not wnx.adjective_fits("loud", "grass") and not wnx.adjective_fits("dry", "microphone")
    assert wnx.adjective_fits("crowded", "street") and wnx.adjective_fits("wet", "grass")
    assert not wnx.adjective_fits("happy", "qwxzv")  # unknown noun: neutral adjectives only


def test_insert_respects_the_nouns_selectional_restrictions() -> None:
    for text in ("A dog climbs the stairs.", "Two women wear sandals.", "A girl jumps off a swing."):
        for seed in range(20):
            for p in PERTURBATIONS["insert"](Sentence(text, fix_tags(tag(text)), 0, len(text)), random.Random(seed)):
                new = apply_edits(text, list(p.edits))
                for bad in ("wooden dog", "elderly sandals", "lonely sandals", "elderly girl", "young girl"):
                    assert bad not in new, new
                assert "in a hurry" not in new and "with great care" not in new, new


def test_resemantic_replaces_verb_or_cohyponym_noun() -> None:
    out = outputs("resemantic", "The dog sleeps.")
    verbs = {row[1] for row in lx.VERB_FORMS} | {inflect(v, "VBZ") for _, vs, _ in vocab.VERB_CLASSES for v in vs}
    sisters = set(wnx.cohyponyms("dog", "n"))
    assert out
    for o in out:
        w = o.rstrip(".").split()
        assert (w[1] == "dog" and w[2] in verbs) or (w[2] == "sleeps" and w[1] in sisters), o


def test_insert_adds_a_modifier() -> None:
    out = outputs("insert", "A man is riding a bike.")
    assert out
    for o in out:
        added = Counter(words(o)) - Counter(words("A man is riding a bike."))
        assert 1 <= sum(added.values()) <= 4
        inserted = set(added) - {"a", "an"}
        # issue 31.4: the slots' vocabulary (rules/vocabulary.py)
        assert inserted <= set(vocab.adjectives_for("man")) | set(vocab.adjectives_for("bike")) | set(
            vocab.MANNER_ADVERBS
        ) | set(lx.SENTENCE_ADVERBS) | {
            w.lower() for pp in vocab.TIME_PHRASES + vocab.PLACE_PHRASES for w in pp.split()
        }, o


def test_insert_fixes_the_article() -> None:
    sent = Sentence("A man sleeps.", tag("A man sleeps."), 0, 13)
    for seed in range(30):
        for p in PERTURBATIONS["insert"](sent, random.Random(seed)):
            new = apply_edits(sent.text, list(p.edits))
            first = new.split()[1]
            if first[0] in "aeiou":
                assert new.startswith("An "), new


def test_delete_removes_adjective_adverb_or_pp() -> None:
    out = outputs("delete", "A tall man walks slowly in the park.")
    assert {"A man walks slowly in the park.", "A tall man walks in the park.", "A tall man walks slowly."} <= out


def test_restructure_voice_clauses_and_fronting() -> None:
    assert "A bike is being ridden by a man." in outputs("restructure", "A man is riding a bike.")
    assert "The ball was kicked by the boy." in outputs("restructure", "The boy kicked the ball.")
    assert "The boy kicked the ball." in outputs("restructure", "The ball was kicked by the boy.")
    assert "Because he was tired, he left early." in outputs("restructure", "He left early because he was tired.")
    assert "In the park, a man sits." in outputs("restructure", "A man sits in the park.")


def test_negation_never_uses_hardly_or_not_really() -> None:
    # generated-gold dev: "There is hardly an elderly woman in a crowd." was not English
    for text in ("There is an elderly woman in a crowd.", "Their hands are holding something", "A man is tall."):
        out = outputs("negation", text)
        assert out
        assert not [o for o in out if " hardly " in o or " not really " in o]


def test_restructure_fronts_only_a_phrase_of_the_verb() -> None:
    # generated-gold dev: the predicate after a copula, and a phrase of a noun, made nonsense
    assert not [o for o in outputs("restructure", "A man is on a bike.") if o.startswith("On a bike")]
    assert not [o for o in outputs("restructure", "The woman is in a field.") if o.startswith("In a field")]
    out = outputs("restructure", "A man is walking away from tents with the word Camden on them.")
    assert not [o for o in out if o.startswith("On them")]
    # kept: a phrase after a content verb or an adverb
    assert "Near the water, the man is standing." in outputs("restructure", "The man is standing near the water.")
    assert "At night, people are sitting outside." in outputs("restructure", "People are sitting outside at night.")


def test_shuffle_is_not_a_default_code() -> None:
    assert "shuffle" in CODES and "shuffle" not in DEFAULT_CODES
    cands = [c for c in RulesGenerator(seed=0).generate(SENTENCES) if isinstance(c, GeneratedCandidate)]
    assert cands and not any(c.perturbation == "shuffle" for c in cands)
    asked = RulesGenerator(seed=0, codes=["shuffle"]).generate(SENTENCES)
    assert {c.perturbation for c in asked if isinstance(c, GeneratedCandidate)} == {"shuffle"}


def test_shuffle_swaps_noun_phrases() -> None:
    assert outputs("shuffle", "The cat chased the dog.") == {"The dog chased the cat."}
    assert "A dog watches a man." in outputs("shuffle", "A man watches a dog.")


# -- the generator -----------------------------------------------------------------------------
SENTENCES = [
    nli("a", "A man is riding a bike because he is late.", "Two dogs don't run in the park."),
    nli("b", "The little boy in jean shorts kicks the soccer ball.", "A little boy is playing soccer outside."),
    nli("c", "A woman sits on a bench in the park.", "Some people are watching a tall man."),
]


def _all(gen: RulesGenerator, originals: list[Original]) -> list[GeneratedCandidate | Skip]:
    return list(gen.generate(originals))


def test_generator_covers_all_codes_and_edits_one_field() -> None:
    out = _all(RulesGenerator(seed=0, codes=CODES), SENTENCES)
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    assert {c.perturbation for c in cands} == set(CODES)
    by_id = {o.id: o for o in SENTENCES}
    for c in cands:
        orig = by_id[c.original_id]
        changed = [k for k in orig.fields if orig.fields[k] != c.fields[k]]
        assert changed == [c.meta["field"]]
        assert c.generator == "rules" and c.target_label is None
        assert isinstance(c.meta["introduced"], list)


def test_generator_is_deterministic_per_seed_and_order_free() -> None:
    a = _all(RulesGenerator(seed=3), SENTENCES)
    b = _all(RulesGenerator(seed=3), SENTENCES)
    c = _all(RulesGenerator(seed=4), SENTENCES)
    rev = _all(RulesGenerator(seed=3), SENTENCES[::-1])
    assert a == b
    assert a != c
    assert sorted(map(repr, a)) == sorted(map(repr, rev))


def test_generator_caps() -> None:
    gen = RulesGenerator(seed=0, max_per_code=1, max_negation=0, max_per_original=5)
    cands = [c for c in _all(gen, SENTENCES) if isinstance(c, GeneratedCandidate)]
    per_orig = Counter(c.original_id for c in cands)
    assert max(per_orig.values()) <= 5
    assert not any(c.perturbation == "negation" for c in cands)
    assert max(Counter((c.original_id, c.perturbation) for c in cands).values()) == 1
    texts = [tuple(sorted(c.fields.items())) for c in cands]
    assert len(texts) == len(set(texts))  # distinct siblings


def test_generator_skips_with_reasons() -> None:
    out = _all(
        RulesGenerator(),
        [
            Original("short", {"text": "Hi there"}, None, (), "sentiment"),
            Original("empty", {"text": "  "}, None, (), "sentiment"),
        ],
    )
    assert [type(x) for x in out] == [Skip, Skip]
    assert "too short" in out[0].reason and "no text field" in out[1].reason


def test_bad_config_fails_at_start() -> None:
    with pytest.raises(GeneratorConfigError, match="unknown control code"):
        RulesGenerator(codes=("negation", "paraphrase"))
    with pytest.raises(GeneratorConfigError):
        RulesGenerator(max_per_original=0)


def test_long_text_edits_one_sentence_and_keeps_the_rest() -> None:
    review = (
        "I saw this in the summer of 1990.<br /><br />The plot is implausible and the acting is weak. "
        "You would have to be a child to enjoy it. The music, however, is quite good. Don't see this."
    )
    orig = Original("r", {"text": review}, "Negative", ("Negative", "Positive"), "sentiment")
    cands = [c for c in _all(RulesGenerator(seed=1, max_sentences=1), [orig]) if isinstance(c, GeneratedCandidate)]
    assert cands
    spans = sentence_spans(review)
    for c in cands:
        if str(c.meta["detail"]).startswith("review flip"):
            # issue 31: the review-wide verdict flip edits every verdict and leaves out the
            # sentences that would still argue the original's side ("Don't see this."); its
            # window holds the sentences it changed, not those it left out
            old, new = c.meta["window"]
            assert old.startswith("The plot is implausible") and "implausible" not in new
            assert "Don't see this" not in old and "Don't see this" not in c.fields["text"]
            continue
        old, new = c.meta["window"]
        assert old in review and old != new
        assert c.fields["text"] == review.replace(old, new, 1)
        assert sum(review[s:e] not in c.fields["text"] for s, e in spans) == 1


def test_generate_is_lazy() -> None:
    pulled = []

    def stream() -> Iterator[Original]:
        for i in range(1000):
            pulled.append(i)
            yield nli(f"o{i}", "A man is riding a bike.", "A person rides.")

    it = RulesGenerator().generate(stream())  # type: ignore[arg-type]
    next(it)
    assert len(pulled) == 1


@pytest.mark.slow  # real CAD data, no model
def test_rules_targets_on_cad_dev_without_model(shared_data) -> None:
    from generation.ml.metrics import introduced_stats
    from projects.formats import read
    from projects.formats.records import OriginalRecord, PairRecord

    origs: dict[str, Original] = {}
    for fmt, task in (("cad-nli", "nli"), ("cad-sentiment", "sentiment")):
        for rec in read(fmt, [str(shared_data / "cad")], task=task, split="dev"):
            o = rec if isinstance(rec, OriginalRecord) else rec.original if isinstance(rec, PairRecord) else None
            if o is not None:
                origs.setdefault(o.id, Original(o.id, dict(o.fields), o.label, (), task))
    assert len(origs) == 200 + 245
    cands = [c for c in RulesGenerator(seed=0).generate(list(origs.values())) if isinstance(c, GeneratedCandidate)]
    with_cand = {c.original_id for c in cands}
    # issue 31 skips on purpose what it cannot edit well: an NLI original with an error every
    # candidate would keep (6 of 200 on dev), and a review with no flip by leaving out and no
    # label-keeping edit (66 of 245: the word flip of a whole review is pooled on texts of one
    # sentence only, REVIEW_FLIP_SENTENCES); measured 194 / 200 and 179 / 245
    for task, floor in (("nli", 0.95), ("sentiment", 0.70)):
        ids = [i for i, o in origs.items() if o.task == task]
        assert sum(i in with_cand for i in ids) >= floor * len(ids), task
    assert {c.perturbation for c in cands} == set(DEFAULT_CODES)
    stats = introduced_stats([c.meta["introduced"] for c in cands])
    # issue 27 traded introduced-word variety for validity (fitting adjectives, time phrases only,
    # person counterparts, same-frame verbs, no hyponyms, review-wide polarity flips): 0.10 here,
    # against about 0.33 before; docs/generation.md reports the diversity line
    assert stats["introduced_distinct_1"] >= 0.09
    assert stats["introduced_max_share"] <= 0.10


def test_built_through_the_registry_with_json_options() -> None:
    from generation.ml import registry

    gen = registry.create(
        "rules",
        {"max_per_code": 3, "codes": ["negation", "insert"]},
        {"mlm_path": "/nowhere"},
        {"seed": 5, "max_per_original": 4},
    )
    assert isinstance(gen, RulesGenerator)
    assert (gen.config.seed, gen.config.max_per_code, gen.config.max_per_original) == (5, 3, 4)
    assert gen.config.codes == ("negation", "insert")
    with pytest.raises(GeneratorConfigError, match="bad option value"):
        registry.create("rules", {"max_per_code": "many"})


def test_lower_case_review_is_split_and_an_unsplittable_one_is_skipped() -> None:
    review = (
        "the lowest score possible is one star? that's a shame. really, i'm going to lobby for a zero "
        "stars option. to give this film even a single star is giving way too much. " * 3
    )
    orig = Original("lc", {"text": review}, "Negative", ("Negative", "Positive"), "sentiment")
    # the generic codes (a sentiment run's own codes need a sentiment-bearing word: issue 27)
    out = list(RulesGenerator(seed=0, codes=DEFAULT_CODES).generate([orig]))
    assert out and all(isinstance(c, GeneratedCandidate) for c in out)
    skip = list(RulesGenerator(seed=0).generate([orig]))
    assert isinstance(skip[0], Skip) and "no sentiment-bearing word" in skip[0].reason
    ramble = Original("long", {"text": " ".join(["word"] * 80)}, None, (), "sentiment")
    skip = list(RulesGenerator().generate([ramble]))
    assert len(skip) == 1 and isinstance(skip[0], Skip) and "no sentence of 3-60 words" in skip[0].reason


def test_sentiment_insert_puts_no_intensifier_before_own() -> None:
    """Round 18: "their [[truly]] own", "her [[particularly]] own way" were most of the inserts
    the LM dropped and readers rejected; the lexicon gives "own" a polarity, but it takes no
    intensifier. The other adjectives of the same sentences still get one."""
    from generation.ml.rules import sentiment_codes

    for text in (
        "Emma was believable in her own way, a sweet way.",
        "They passed it off as their own. It is a funny show.",
    ):
        sent = Sentence(text, fix_tags(tag(text)), 0, len(text))
        assert "own" in [t.lower for t in sent.toks if t.pos == "JJ"]
        for seed in range(10):
            out = [apply_edits(text, list(p.edits)) for p in sentiment_codes.insert(sent, random.Random(seed))]
            assert out, text
            assert all(
                " own" in o and not any(f"{w} own" in o for w in sentiment_codes.INSERTED_INTENSIFIERS) for o in out
            ), out
