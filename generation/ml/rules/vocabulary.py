"""Slot vocabularies of the NLI rule codes (issue 31.4): what ``insert``, ``quantifier`` and
``resemantic`` may put in a slot, larger than ``lexicons``' few shared lists and checked by the
same constraints, so the words the edits introduce stop repeating across a pool ("several",
"some", "in the morning" made a pool whose introduced tokens had a distinct-1 of 0.16).

* Adjectives by the category of the noun they describe (:func:`adjectives_for`): the category
  is the first of :data:`NOUN_CATEGORIES` whose WordNet synset the noun's first sense descends
  from (hypernym closure: "jacket" is a garment, "guitar" a musical instrument, "puppy" a
  mammal), else its lexicographer file. A garment gets "striped", a mammal "furry", a person
  "barefoot"; a noun of no category gets none (no "loud grass", "a dry microphone").
* Quantifiers of a subject noun phrase (:data:`PLURAL_DETERMINERS`).
* Time and place phrases for the end of a sentence (:data:`TIME_PHRASES`,
  :data:`PLACE_PHRASES`), each kept out of a sentence that already says when or where
  (:func:`says_when`, :func:`says_where`).
* Manner adverbs for action verbs (:data:`MANNER_ADVERBS`).
* Verb classes of one argument frame (:data:`VERB_CLASSES`), some of them restricted to
  objects of a category ("hugs a child" / "greets a child", never "greets a ball").

No Django.
"""

from __future__ import annotations

from functools import lru_cache

from generation.ml import lexicons as lx
from generation.ml.rules import wordnet as wnx
from generation.ml.rules.phrases import singularize

# (category, WordNet synsets whose hyponyms belong to it), most specific first
NOUN_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("garment", ("clothing.n.01", "headdress.n.01", "footwear.n.02", "footwear.n.01")),
    ("instrument", ("musical_instrument.n.01",)),
    ("vehicle", ("conveyance.n.03", "vehicle.n.01", "vessel.n.02")),
    ("furniture", ("furniture.n.01",)),
    ("building", ("building.n.01", "house.n.01")),
    ("container", ("container.n.01", "bag.n.01")),
    ("ball", ("ball.n.01",)),
    ("mammal", ("mammal.n.01",)),
    ("bird", ("bird.n.01",)),
    ("group", ("social_group.n.01", "gathering.n.01")),
    ("tree", ("tree.n.01", "woody_plant.n.01")),
)
# lexicographer files that name a category when no synset above does
LEXNAME_CATEGORIES: dict[str, str] = {
    "noun.person": "person",
    "noun.animal": "animal",
    "noun.food": "food",
    "noun.plant": "plant",
}

_PERSON = (
    "young",
    "old",
    "tall",
    "short",
    "thin",
    "happy",
    "tired",
    "busy",
    "angry",
    "friendly",
    "lonely",
    "elderly",
    "smiling",
    "serious",
    "curious",
    "cheerful",
    "bored",
    "sleepy",
    "worried",
    "excited",
    "hungry",
    "barefoot",
    "blond",
    "muscular",
    "relaxed",
    "shy",
    "proud",
    "nervous",
    "athletic",
    "sweaty",
    "confident",
    "focused",
    "laughing",
    "exhausted",
    "determined",
    "talented",
    "sunburned",
    "middle-aged",
)
_ANIMAL = ("young", "old", "small", "large", "tiny", "huge", "wet", "hungry", "calm", "curious")
_MAMMAL = (
    *_ANIMAL,
    "fluffy",
    "furry",
    "playful",
    "muddy",
    "skinny",
    "energetic",
    "friendly",
    "excited",
    "sleepy",
    "happy",
    "spotted",
)
COLOUR_WORDS = frozenset(lx.COLOURS) | {"colorful", "plaid", "striped", "spotted"}
_COLOURS = ("red", "blue", "green", "black", "white", "yellow", "pink", "purple", "brown", "gray", "orange")
ADJECTIVES: dict[str, tuple[str, ...]] = {
    "person": _PERSON,
    "animal": _ANIMAL,
    "mammal": _MAMMAL,
    "bird": ("small", "large", "tiny", "white", "black", "hungry", "noisy", "colorful"),
    "garment": (
        *_COLOURS,
        *("colorful", "striped", "long", "loose", "tight", "warm", "new", "old", "dirty", "clean", "torn", "plaid"),
        *("baggy", "fancy", "matching", "faded", "bright", "heavy"),
    ),
    "instrument": ("old", "new", "large", "small", "shiny", "heavy", "expensive", "battered", "wooden"),
    "vehicle": (
        *("new", "old", "large", "small", "shiny", "dirty", "rusty", "colorful", "vintage", "fast"),
        *("red", "blue", "white", "black", "yellow", "green"),
    ),
    "furniture": ("wooden", "old", "small", "large", "new", "broken", "white", "comfortable", "antique", "heavy"),
    "building": ("old", "tall", "large", "small", "new", "modern", "white", "red", "historic", "abandoned"),
    "container": (
        "small",
        "large",
        "plastic",
        "metal",
        "empty",
        "full",
        "heavy",
        "red",
        "blue",
        "old",
        "new",
        "wooden",
    ),
    "ball": ("small", "large", "red", "blue", "white", "yellow", "green", "orange", "new", "old", "soft", "bouncy"),
    "food": ("fresh", "warm", "tasty", "delicious", "large", "small"),
    "plant": ("tall", "green", "dry", "wild"),
    "tree": ("tall", "old", "large", "small", "green", "leafy", "bare", "young"),
    "place": ("crowded", "empty", "busy", "quiet", "small", "large", "local", "noisy"),
    "group": ("large", "small", "loud", "quiet", "local", "excited", "cheering"),
}
# age adjectives contradict a noun that already says the age ("an elderly girl"); these only
# fit some nouns of a category
AGE_ADJECTIVES = lx.AGE_ADJECTIVES | {"middle-aged"}
_CHILD_NOUNS = lx.AGE_NOUNS - {"adult", "elder", "senior", "grandmother", "grandfather", "grandma", "grandpa"}
_ADULT_ONLY = frozenset({"muscular", "sunburned", "middle-aged", "elderly", "talented", "determined"})


def _base(noun: str) -> str:
    """The singular of a noun ("shoes" -> "shoe": WordNet's own lemma of "shoes" is the idiom
    "in someone's shoes")."""
    low = noun.lower()
    single = singularize(low)
    if single != low and wnx.wordnet().synsets(single, "n"):
        return single
    return wnx.lemma(low, "n")


# places the place adjectives fit ("a crowded market"); WordNet's noun.location also files
# parts and regions ("the empty middle of a play" was invalid)
PLACES = lx.PLACE_NOUNS | frozenset(
    {"city", "town", "village", "yard", "playground", "plaza", "alley", "mall", "gym", "church", "classroom"}
    | {"library", "museum", "theater", "arena", "airport", "pub", "club", "diner", "courtyard", "hallway"}
)


@lru_cache(maxsize=65536)
def category(noun: str) -> str | None:
    """The noun's category (:data:`NOUN_CATEGORIES`, then :data:`LEXNAME_CATEGORIES`, then the
    places of ``lexicons.PLACE_NOUNS``), from its first WordNet sense; None for other nouns."""
    base = _base(noun)
    if base in PLACES:
        return "place"
    if base in ("people", "folks", "persons", "person"):
        return "person"
    syns = wnx.wordnet().synsets(base, "n")
    if not syns:
        return None
    first = syns[0]
    names = {first.name()} | {h.name() for h in first.closure(lambda x: x.hypernyms() + x.instance_hypernyms())}
    for cat, roots in NOUN_CATEGORIES:
        if names.intersection(roots):
            return cat
    return LEXNAME_CATEGORIES.get(first.lexname())


def adjectives_for(noun: str) -> tuple[str, ...]:
    """Adjectives that can describe ``noun`` (by :func:`category`): none for a noun of no
    category; no age adjective before a noun that says the age, no adult-only adjective
    ("muscular", "sunburned") before a child."""
    cat = category(noun)
    if cat is None:
        return ()
    base = _base(noun)
    adjs = ADJECTIVES[cat]
    if base in lx.AGE_NOUNS:
        adjs = tuple(a for a in adjs if a not in AGE_ADJECTIVES)
    if base in _CHILD_NOUNS:
        adjs = tuple(a for a in adjs if a not in _ADULT_ONLY)
    return adjs


# -- quantifiers of a subject noun phrase -----------------------------------------------------
# "a man walks" -> "<q> men walk" and "two men" -> "<q> men" (subject only: see lexical_codes)
# single words mostly: every "a ... of" repeats two function words across the pool
PLURAL_DETERMINERS: tuple[str, ...] = (
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "several",
    "many",
    "some",
    "numerous",
    "a few",
)

# -- time and place phrases for the end of a sentence ------------------------------------------
# few "the"s: "in the morning", "in the evening", ... repeated "in" and "the" across a pool
TIME_PHRASES: tuple[str, ...] = (
    "at night",
    "in the morning",
    "in the afternoon",
    "during the day",
    "on the weekend",
    "at dawn",
    "at sunset",
    "at dusk",
    "at noon",
    "at midnight",
    "on Sunday",
    "on Saturday",
    "after school",
    "after work",
    "after lunch",
    "before dinner",
    "before breakfast",
    "on a sunny day",
    "on a cold day",
    "on a rainy afternoon",
    "in summer",
    "in winter",
    "this morning",
    "late at night",
)
PLACE_PHRASES: tuple[str, ...] = (
    "outside",
    "outdoors",
    "indoors",
    "downtown",
    "at home",
    "in town",
    "in the city",
    "in the park",
    "in the countryside",
    "at the beach",
    "in a small village",
    "in the backyard",
    "near the river",
    "at a festival",
    "nearby",
    "in public",
)
_TIME_WORDS = frozenset(
    {
        "night",
        "morning",
        "afternoon",
        "evening",
        "day",
        "noon",
        "dawn",
        "dusk",
        "sunset",
        "sunrise",
        "summer",
        "winter",
        "spring",
        "fall",
        "autumn",
        "weekend",
        "today",
        "tonight",
        "midnight",
        "breakfast",
        "lunch",
        "dinner",
        "school",
        "work",
        "sunday",
        "saturday",
        "weekends",
        "yesterday",
        "still",
        "already",
        "now",
        "sun",
        "snow",
        "rain",
        "dark",
        "daytime",
        "nighttime",
        "christmas",
        "halloween",
        "holiday",
        "party",
        "wedding",
        "game",
        "concert",
        "competition",
        "race",
        "parade",
        "match",
    }
)
_PLACE_PREPOSITIONS = frozenset(
    {
        "in",
        "on",
        "at",
        "near",
        "inside",
        "outside",
        "under",
        "beside",
        "behind",
        "across",
        "along",
        "through",
        "around",
        "over",
        "into",
        "onto",
        "by",
        "down",
        "up",
        "past",
        "toward",
        "towards",
        "from",
        "above",
        "below",
        "between",
        "among",
        "off",
        "outdoors",
        "indoors",
        "outdoor",
        "indoor",
        "here",
        "there",
        "home",
        "downtown",
        "away",
    }
)


def says_when(words: list[str]) -> bool:
    """Whether a sentence already says when (a time word, an event, "still" / "already"):
    "The sun is shining at night", "still closed in the morning" make no sense."""
    return any(w.lower() in _TIME_WORDS for w in words)


def says_where(words: list[str]) -> bool:
    """Whether a sentence already says where, or has a phrase a place would attach to
    (any preposition, "outside", "home", "there")."""
    return any(w.lower() in _PLACE_PREPOSITIONS for w in words)


# -- manner adverbs for an action verb ---------------------------------------------------------
MANNER_ADVERBS: tuple[str, ...] = (
    "quickly",
    "slowly",
    "carefully",
    "happily",
    "quietly",
    "eagerly",
    "calmly",
    "gently",
    "proudly",
    "nervously",
    "casually",
    "cheerfully",
    "playfully",
    "steadily",
    "silently",
    "confidently",
    "lazily",
    "excitedly",
    "intently",
    "patiently",
    "skillfully",
    "awkwardly",
    "energetically",
    "hurriedly",
)

# -- nouns swapped within a tight class (resemantic) ------------------------------------------
# WordNet's sister terms of artifacts were mostly nonsense in context (issue 27: "in front of a
# floor", "drinking out of a metal basket"); these classes keep a noun's role in a scene (what
# is worn on the head, played, ridden, sat on), so "a man in a red shirt" -> "a red jacket",
# "plays the guitar" -> "plays the violin", "rides a bike" -> "rides a scooter"
# games swap only after "play" ("A boy with a basketball" is a ball: "with a tennis")
SPORTS = frozenset({"soccer", "football", "basketball", "tennis", "volleyball", "baseball", "hockey", "rugby"})
NOUN_CLASSES: tuple[frozenset[str], ...] = (
    frozenset({"shirt", "jacket", "sweater", "coat", "hoodie", "vest", "blouse", "sweatshirt", "uniform"}),
    frozenset({"hat", "cap", "helmet", "beanie", "bandana"}),
    frozenset({"shoes", "boots", "sandals", "sneakers", "slippers"}),
    frozenset({"jeans", "shorts", "pants", "trousers", "skirt", "overalls"}),
    frozenset({"guitar", "violin", "cello", "banjo", "ukulele", "bass"}),
    frozenset({"flute", "trumpet", "saxophone", "clarinet", "trombone", "harmonica"}),
    frozenset({"piano", "keyboard", "accordion", "organ"}),
    frozenset({"bike", "bicycle", "motorcycle", "scooter", "tricycle"}),
    frozenset({"car", "truck", "van", "jeep", "taxi"}),
    frozenset({"boat", "canoe", "kayak", "raft", "sailboat"}),
    frozenset({"cup", "mug", "bottle"}),
    frozenset({"bag", "backpack", "basket", "suitcase", "purse", "box"}),
    frozenset({"chair", "bench", "stool", "couch", "sofa"}),
    SPORTS,
    frozenset({"book", "newspaper", "magazine", "letter", "menu"}),
    frozenset({"camera", "phone", "cellphone", "tablet", "laptop"}),
    frozenset({"kite", "frisbee", "balloon"}),
    frozenset({"coffee", "tea", "juice", "soda", "milk", "beer", "wine"}),
    frozenset({"pizza", "sandwich", "burger", "salad", "soup", "pasta", "cake"}),
)


# nouns with no singular: they swap only among themselves and are never inflected
PLURAL_ONLY = frozenset(
    {"shoes", "boots", "sandals", "sneakers", "slippers", "jeans", "shorts", "pants", "trousers"}
) | {"overalls"}


def noun_swaps(noun: str) -> tuple[str, ...]:
    """The other nouns of ``noun``'s class (:data:`NOUN_CLASSES`), singular forms for a
    singular noun; () for a noun of no class."""
    low = noun.lower()
    base = low if any(low in c for c in NOUN_CLASSES) else _base(low)
    for c in NOUN_CLASSES:
        if base in c:
            return tuple(sorted(c - {base, low}))
    return ()


# -- verb classes of one argument frame --------------------------------------------------------
# (frame, verbs, object categories or None for any object): an intransitive verb never gets
# an object, a transitive one never loses it, and a class with object categories only swaps
# before an object of one of them ("greets a ball" cannot come out)
VERB_CLASSES: tuple[tuple[str, frozenset[str], frozenset[str] | None], ...] = (
    *((frame, verbs, None) for frame, verbs in lx.VERB_CLASSES if verbs != frozenset({"like", "love", "hate"})),
    ("intransitive", frozenset({"talk", "chat"}), None),
    ("intransitive", frozenset({"jump", "hop", "leap"}), None),
    ("intransitive", frozenset({"wave", "point", "cheer"}), None),
    ("intransitive", frozenset({"climb", "crawl"}), None),
    ("intransitive", frozenset({"pose", "smile"}), None),
    ("intransitive", frozenset({"sleep", "nap", "rest"}), None),
    ("intransitive", frozenset({"skate", "ski", "surf"}), None),
    ("transitive", frozenset({"climb", "descend"}), None),
    ("transitive", frozenset({"drink", "sip"}), frozenset({"food"})),
    ("transitive", frozenset({"cook", "bake", "grill", "prepare"}), frozenset({"food"})),
    ("transitive", frozenset({"hug", "kiss", "greet", "help"}), frozenset({"person"})),
    ("transitive", frozenset({"pet", "feed", "brush", "hold"}), frozenset({"mammal", "animal"})),
    ("transitive", frozenset({"wash", "clean", "paint", "fix"}), frozenset({"vehicle", "furniture", "building"})),
    ("transitive", frozenset({"eat", "share"}), frozenset({"food"})),
    ("transitive", frozenset({"play", "tune", "carry"}), frozenset({"instrument"})),
    ("transitive", frozenset({"ride", "push", "carry"}), frozenset({"vehicle"})),
    ("transitive", frozenset({"throw", "catch", "kick", "bounce"}), frozenset({"ball"})),
)


__all__ = [
    "ADJECTIVES",
    "MANNER_ADVERBS",
    "NOUN_CATEGORIES",
    "NOUN_CLASSES",
    "PLACE_PHRASES",
    "PLURAL_DETERMINERS",
    "TIME_PHRASES",
    "VERB_CLASSES",
    "adjectives_for",
    "category",
    "noun_swaps",
    "says_when",
    "says_where",
]
