"""The candidate life cycle, in one place.

    generated -> filtered_out | pooled
    pooled    -> routed | auto_labeled | abstained | human_labeled
    routed    -> human_labeled | pooled (un-routed)
    abstained -> routed | auto_labeled | human_labeled
    auto_labeled -> routed | human_labeled | auto_labeled (re-labelled by a newer model)

Every state change goes through :func:`generation.services.candidates_transition`, which
filters on the allowed source states in the UPDATE itself, so a concurrent change can never
move a candidate along an edge that is not listed here.
"""

from __future__ import annotations

GENERATED = "generated"
FILTERED_OUT = "filtered_out"
POOLED = "pooled"
ROUTED = "routed"
HUMAN_LABELED = "human_labeled"
AUTO_LABELED = "auto_labeled"
ABSTAINED = "abstained"

STATES = [GENERATED, FILTERED_OUT, POOLED, ROUTED, HUMAN_LABELED, AUTO_LABELED, ABSTAINED]

TRANSITIONS: dict[str, frozenset[str]] = {
    GENERATED: frozenset({FILTERED_OUT, POOLED}),
    FILTERED_OUT: frozenset(),
    POOLED: frozenset({ROUTED, AUTO_LABELED, ABSTAINED, HUMAN_LABELED}),
    ROUTED: frozenset({HUMAN_LABELED, POOLED}),
    ABSTAINED: frozenset({ROUTED, AUTO_LABELED, HUMAN_LABELED}),
    AUTO_LABELED: frozenset({ROUTED, HUMAN_LABELED, AUTO_LABELED}),
    HUMAN_LABELED: frozenset(),
}


class InvalidTransition(ValueError):
    pass


def sources_for(target: str) -> list[str]:
    """States from which ``target`` may be reached."""
    if target not in TRANSITIONS:
        raise InvalidTransition(f"unknown state {target!r}")
    return [s for s, targets in TRANSITIONS.items() if target in targets]


def check(source: str, target: str) -> None:
    if target not in TRANSITIONS.get(source, frozenset()):
        raise InvalidTransition(f"a candidate cannot go from {source!r} to {target!r}")
