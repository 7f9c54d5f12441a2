"""Blank filling with a small instruction-tuned causal LM (the bundled SmolLM2-135M): the chat
prompts ``llm-prompt`` sends when the tokenizer has a chat template. No Django.

A 135M model asked "fill in the blank so that the review is negative" mostly answers about the
task ("The review was negative.") instead of filling the blank. Two things make it fill:

* **few-shot turns**: two short demonstrations (not from the data) of a sentence with a
  ``[blank]`` answered by the same sentence with the blank filled, aiming at the target label;
* **a pre-filled answer**: the assistant's turn already holds the sentence up to the blank, so
  the model only continues the sentence. The fill is what it writes before it re-joins the
  text after the blank (:func:`join_fill`). A continuation that never re-joins but ends the
  sentence within a few words rewrites the rest of the sentence (:func:`rest_fill`): the
  135M model often finishes the sentence its own way ("… by how bad this movie is" → "… the
  most tedious experience imaginable."), and the similarity, perplexity and teacher filters
  judge that edit like any other.

The masked span, the target label in the instruction, and the artifact and teacher filters
stay as in DISCO; only the way the model is asked changes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

BLANK = "[blank]"

# (masked sentence, fill) per verbalised target; the demonstrations use no data text
SENTIMENT_DEMOS: dict[str, tuple[tuple[str, str], ...]] = {
    "negative": (
        ("The food was [blank] and the staff were friendly.", "cold and bland"),
        ("I [blank] this book from start to finish.", "hated"),
    ),
    "positive": (
        ("The food was [blank] and the staff were rude.", "delicious and fresh"),
        ("I [blank] this book from start to finish.", "loved"),
    ),
}
# what the sentiment demonstrations are about: a fill bringing one into a text that does not
# mention it copies the demonstration ("The book turned out perfectly" in a film review)
DEMO_TOPICS = ("food", "staff", "book")
NLI_DEMOS: dict[str, tuple[tuple[str, str, str], ...]] = {
    # (hypothesis, masked premise, fill)
    "true": (("A woman is outdoors.", "A woman [blank] in the park.", "is walking her dog"),),
    "false": (("A woman is outdoors.", "A woman [blank] in her kitchen.", "is cooking dinner"),),
    "possible": (("A woman is walking her dog.", "A woman [blank] in the park.", "is walking"),),
}


def chat_messages(task: str, verbalized: str, masked: str, other: str | None) -> list[dict[str, str]]:
    """System turn, demonstrations, and the user turn for ``masked`` (one ``[blank]``)."""
    if task == "nli":
        system = (
            "You replace [blank] in the premise with a few words so that the hypothesis is "
            f"{verbalized} given the premise. Reply with the whole premise."
        )
        msgs = [{"role": "system", "content": system}]
        for hyp, prem, fill in NLI_DEMOS.get(verbalized, ()):
            msgs.append({"role": "user", "content": f"Hypothesis: {hyp}\nPremise: {prem}"})
            msgs.append({"role": "assistant", "content": prem.replace(BLANK, fill)})
        msgs.append({"role": "user", "content": f"Hypothesis: {other or ''}\nPremise: {masked}"})
        return msgs
    system = (
        f"You replace [blank] in a sentence with a few words so that the sentence becomes {verbalized}. "
        "Reply with the whole sentence."
    )
    msgs = [{"role": "system", "content": system}]
    for sent, fill in SENTIMENT_DEMOS.get(verbalized.lower(), ()):
        msgs.append({"role": "user", "content": f"Make it {verbalized}: {sent}"})
        msgs.append({"role": "assistant", "content": sent.replace(BLANK, fill)})
    msgs.append({"role": "user", "content": f"Make it {verbalized}: {masked}"})
    return msgs


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+(?:'\w+)?|[^\w\s]", text)


def join_fill(continuation: str, suffix: str, max_words: int) -> str | None:
    """The fill in ``continuation`` (what the model wrote after the pre-filled text before the
    blank): the text before it re-joins ``suffix`` (the text after the blank: its first two
    words are looked for, case-insensitively, at a word boundary). When the suffix starts
    with punctuation (or is empty) and the words are not found, the fill ends at the model's
    first punctuation mark. None when there is no such fill of 1..``max_words`` words."""
    line = continuation.split("\n")[0]
    toks = _tokens(suffix)
    key = [t for t in toks if t[:1].isalnum()][:2]
    fill: str | None = None
    for n in (2, 1):  # the first two words, else the first one
        if fill is None and len(key) >= n:
            pattern = r"(?<![\w'])" + r"\W+".join(re.escape(t) for t in key[:n]) + r"(?![\w'])"
            m = re.search(pattern, line, flags=re.IGNORECASE)
            if m is not None:
                fill = line[: m.start()]
    starts_with_mark = not toks or not toks[0][:1].isalnum()
    if fill is None and starts_with_mark:
        fill = re.split(r"[.,;:!?\"()]", line, maxsplit=1)[0]
    if fill is None:
        return None
    fill = fill.strip().strip("\"'`[]").rstrip(",;:").strip()
    if starts_with_mark:  # "... quite dull and" before ", the second half": no dangling conjunction
        fill = re.sub(r"\s+(?:and|but|or)$", "", fill, flags=re.IGNORECASE)
    if not fill or len(fill.split()) > max_words:
        return None
    return fill


def continuation_after(reply: str, before: str) -> str | None:
    """What a model server's whole-sentence answer says after ``before`` (the text before the
    blank): an endpoint cannot pre-fill the answer as :mod:`generation.ml.llm_prompt` does
    in-process, so the model writes the sentence again and the fill is read after the words of
    ``before`` (matched word by word, case and punctuation aside). None when the answer does
    not start with them."""
    line = reply.strip().split("\n")[0].strip().strip("\"'`")
    words = re.findall(r"\w+(?:'\w+)?", before)
    if not words:
        return line
    pattern = r"^\W*" + r"\W+".join(re.escape(w) for w in words) + r"(?![\w'])"
    m = re.match(pattern, line, flags=re.IGNORECASE)
    return None if m is None else " " + line[m.end() :].lstrip()


def rest_fill(continuation: str, suffix: str, max_words: int) -> str | None:
    """The continuation as the new rest of the sentence, when it does not re-join ``suffix``
    (the rest of the sentence after the blank): its first line up to and including its first
    sentence-final mark. None when it has no such end within ``max_words`` words, or when it is
    the suffix itself (nothing filled)."""
    line = continuation.split("\n")[0]
    m = re.search(r"[.!?]+[\"')\]]*(?=\s|$)", line)
    if m is None:
        return None
    rest = line[: m.end()].strip()
    words = re.findall(r"\w+", rest)
    if not words or len(words) > max_words:
        return None
    if re.findall(r"\w+", rest.lower()) == re.findall(r"\w+", suffix.lower()):
        return None
    return rest


def _stems(text: str) -> set[str]:
    from generation.ml.lexicons import FUNCTION_WORDS

    words = re.findall(r"[a-z]+", text.lower())
    return {w[:4] for w in words if len(w) > 2 and w not in FUNCTION_WORDS}


def _demo_texts() -> list[str]:
    out = [sent.replace(BLANK, f) for demos in SENTIMENT_DEMOS.values() for sent, f in demos]
    out += [f"{h} {prem.replace(BLANK, f)}" for demos in NLI_DEMOS.values() for h, prem, f in demos]
    return out


def copies_demo(fill: str, text: str = "") -> bool:
    """The fill repeats a demonstration: three or more of its words in a row (not in ``text``
    already), or two or more
    of its content words (by their first four letters: "hate" is "hated") that the original
    ``text`` does not hold ("I hate this book" in a review about a film), or a demonstration's
    topic word that the text does not use ("book", "staff")."""
    words = re.findall(r"\w+", fill.lower())
    if len(words) >= 3:
        own = re.findall(r"\w+", text.lower())
        grams = {tuple(words[i : i + 3]) for i in range(len(words) - 2)}
        grams -= {tuple(own[i : i + 3]) for i in range(len(own) - 2)}
        for demo in _demo_texts():
            d = re.findall(r"\w+", demo.lower())
            if grams & {tuple(d[i : i + 3]) for i in range(len(d) - 2)}:
                return True
    new = _stems(fill) - _stems(text)
    if new & _stems(" ".join(DEMO_TOPICS)):
        return True
    return any(len(new & _stems(demo)) >= 2 for demo in _demo_texts())


def sentence_around(text: str, start: int, end: int, sentences: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """The (a, b) sentence of ``sentences`` holding text[start:end]; the whole text if none."""
    return next(((a, b) for a, b in sentences if a <= start and end <= b), (0, len(text)))
