"""Small closed-class lexicons shared by the rules generator, the control-code tagger and the
artifact filters. Plain data, no Django, no downloads."""

from __future__ import annotations

# -- negation ----------------------------------------------------------------------------------
# Whole words (lower case) that express negation. "n't" is a token of its own after tokenising.
NEGATION_WORDS: frozenset[str] = frozenset({
    "not", "n't", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor",
    "cannot", "without", "hardly", "barely", "scarcely", "noone", "nope",
})
# Contracted negative auxiliaries as one word (when a text is not split at "n't").
NEGATED_CONTRACTIONS: frozenset[str] = frozenset({
    "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "haven't", "hasn't",
    "hadn't", "won't", "wouldn't", "can't", "couldn't", "shouldn't", "mustn't", "mightn't",
    "needn't", "ain't", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "cant",
    "wont", "couldnt", "shouldnt", "wouldnt",
})
# Auxiliaries / modals after which "not" can be inserted.
AUXILIARIES: frozenset[str] = frozenset({
    "is", "are", "was", "were", "am", "be", "been", "has", "have", "had", "do", "does", "did",
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
})
COPULAS: frozenset[str] = frozenset({"is", "are", "was", "were", "am"})
# do-support for negating a plain verb: tag -> auxiliary
DO_SUPPORT: dict[str, str] = {"VBZ": "does", "VBD": "did", "VBP": "do"}
# Negation alternatives so negation candidates vary their form (no single-word shortcut).
ADVERBIAL_NEGATIONS: tuple[str, ...] = ("not", "never", "no longer", "hardly", "not really")
# Affirmative replacements when a negation is removed (varied for the same reason).
NEGATION_REMOVALS: dict[str, tuple[str, ...]] = {
    "never": ("always", "often", "sometimes"),
    "nothing": ("something", "everything", "a lot"),
    "nobody": ("somebody", "everybody", "someone"),
    "none": ("some", "all", "most"),
    "nowhere": ("somewhere", "everywhere"),
    "no": ("a", "some", "the"),
    "without": ("with",),
    "neither": ("either", "both"),
    "nor": ("or", "and"),
    "hardly": ("really", "often"),
    "barely": ("easily", "clearly"),
}

# -- quantifiers -------------------------------------------------------------------------------
QUANTIFIERS: frozenset[str] = frozenset({
    "some", "all", "many", "few", "several", "most", "every", "each", "any", "both", "no",
    "much", "little", "more", "less", "fewer", "a", "an", "one", "two", "three", "four", "five",
    "six", "seven", "eight", "nine", "ten", "twelve", "twenty", "hundred", "dozens", "lots",
    "numerous", "multiple", "none", "only", "single", "couple", "pair", "group", "bunch",
    "crowd", "handful", "plenty",
})
# Determiner-like quantifiers the generator swaps between (plural-compatible, singular-compatible).
PLURAL_QUANTIFIERS: tuple[str, ...] = ("some", "all", "many", "few", "several", "most", "two", "three",
                                        "no", "four", "both")
SINGULAR_QUANTIFIERS: tuple[str, ...] = ("a", "one", "every", "each", "no", "the")
NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "hundred": 100,
}
NUMBER_BY_VALUE: dict[int, str] = {v: k for k, v in NUMBER_WORDS.items()}

# -- closed-class words ------------------------------------------------------------------------
DETERMINERS: frozenset[str] = frozenset({
    "a", "an", "the", "this", "that", "these", "those", "his", "her", "its", "their", "our",
    "my", "your", "some", "no", "every", "each", "any", "all",
})
PRONOUNS: frozenset[str] = frozenset({
    "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them", "someone",
    "somebody", "everyone", "everybody", "this", "that", "there",
})
PREPOSITIONS: frozenset[str] = frozenset({
    "in", "on", "at", "by", "with", "from", "to", "for", "of", "near", "under", "over", "behind",
    "into", "onto", "through", "across", "beside", "inside", "outside", "around", "along",
    "towards", "during", "after", "before", "while", "against", "between", "among", "down", "up",
})
PASSIVE_MARKERS: frozenset[str] = frozenset({"by", "was", "were", "is", "are", "been", "being", "be"})
CLAUSE_CONNECTIVES: tuple[str, ...] = ("because", "while", "and", "but", "although", "as", "since", "when")
FUNCTION_WORDS: frozenset[str] = (
    DETERMINERS | PRONOUNS | PREPOSITIONS | AUXILIARIES
    | frozenset({"and", "or", "but", "so", "as", "than", "then", "if", "because", "while", "who",
                 "which", "whom", "whose", "what", "where", "when", "how", "why", "very", "too",
                 "also", "just", "'s", "'re", "'ve", "'m", "'ll", "'d", "being", "there"})
)
INTENSIFIERS: frozenset[str] = frozenset({
    "very", "really", "quite", "extremely", "too", "so", "rather", "pretty", "fairly", "truly",
    "incredibly", "absolutely", "totally", "completely", "highly", "slightly", "somewhat",
})

# -- insertion material ------------------------------------------------------------------------
# Adjectives that fit before most concrete nouns; many of them so inserted text stays diverse.
INSERT_ADJECTIVES: tuple[str, ...] = (
    "young", "old", "tall", "small", "large", "happy", "tired", "busy", "quiet", "loud", "red",
    "blue", "green", "black", "white", "bright", "dark", "wet", "dry", "crowded", "empty", "new",
    "famous", "local", "angry", "calm", "strange", "friendly", "lonely", "elderly", "wooden",
    "shiny", "dirty", "clean", "heavy", "tiny", "huge", "smiling", "serious", "curious",
)
# Evaluative adjectives for review-like text (both polarities, used sparingly).
INSERT_EVALUATIVE: tuple[str, ...] = (
    "brilliant", "dull", "clever", "predictable", "charming", "tedious", "stunning", "forgettable",
    "moving", "awkward", "memorable", "shallow", "gripping", "bland", "witty", "clumsy",
)
INSERT_ADVERBS: tuple[str, ...] = (
    "quickly", "slowly", "carefully", "happily", "quietly", "suddenly", "eagerly", "calmly",
    "loudly", "gently", "proudly", "nervously", "barely", "clearly", "easily", "rarely", "finally",
    "really", "truly", "almost", "certainly", "probably", "honestly", "surprisingly",
)
INSERT_PPS: tuple[str, ...] = (
    "in the park", "at night", "on the street", "near the water", "in the morning", "at home",
    "with a friend", "in the rain", "after work", "during the day", "by the window",
    "in a hurry", "for the first time", "on a sunny day", "in the city", "at the beach",
    "in front of a crowd", "with great care", "on the weekend", "in silence",
)
# Verbs (3rd person singular present, past, -ing) for verb replacement in `resemantic`.
VERB_FORMS: tuple[tuple[str, str, str, str], ...] = (
    # base, VBZ, VBD, VBG
    ("walk", "walks", "walked", "walking"), ("run", "runs", "ran", "running"),
    ("sit", "sits", "sat", "sitting"), ("stand", "stands", "stood", "standing"),
    ("eat", "eats", "ate", "eating"), ("sleep", "sleeps", "slept", "sleeping"),
    ("read", "reads", "read", "reading"), ("watch", "watches", "watched", "watching"),
    ("play", "plays", "played", "playing"), ("jump", "jumps", "jumped", "jumping"),
    ("sing", "sings", "sang", "singing"), ("dance", "dances", "danced", "dancing"),
    ("swim", "swims", "swam", "swimming"), ("talk", "talks", "talked", "talking"),
    ("work", "works", "worked", "working"), ("wait", "waits", "waited", "waiting"),
    ("cook", "cooks", "cooked", "cooking"), ("paint", "paints", "painted", "painting"),
    ("climb", "climbs", "climbed", "climbing"), ("ride", "rides", "rode", "riding"),
    ("carry", "carries", "carried", "carrying"), ("hold", "holds", "held", "holding"),
    ("push", "pushes", "pushed", "pushing"), ("throw", "throws", "threw", "throwing"),
    ("write", "writes", "wrote", "writing"), ("clean", "cleans", "cleaned", "cleaning"),
    ("like", "likes", "liked", "liking"), ("love", "loves", "loved", "loving"),
    ("hate", "hates", "hated", "hating"), ("enjoy", "enjoys", "enjoyed", "enjoying"),
    ("sell", "sells", "sold", "selling"), ("buy", "buys", "bought", "buying"),
    ("fix", "fixes", "fixed", "fixing"), ("build", "builds", "built", "building"),
)
# Past participles for simple active -> passive (VBD -> VBN when they differ).
IRREGULAR_PARTICIPLES: dict[str, str] = {
    "ate": "eaten", "threw": "thrown", "wrote": "written", "rode": "ridden", "sang": "sung",
    "swam": "swum", "ran": "run", "drove": "driven", "took": "taken", "gave": "given",
    "saw": "seen", "broke": "broken", "chose": "chosen", "drew": "drawn", "flew": "flown",
    "hid": "hidden", "shook": "shaken", "stole": "stolen", "spoke": "spoken", "wore": "worn",
    "began": "begun", "bit": "bitten", "blew": "blown", "knew": "known", "grew": "grown",
}
OBJECT_PRONOUN: dict[str, str] = {"i": "me", "he": "him", "she": "her", "we": "us", "they": "them"}
SUBJECT_PRONOUN: dict[str, str] = {v: k for k, v in OBJECT_PRONOUN.items()}
