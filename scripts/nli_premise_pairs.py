"""Pairs for a large test project from a flat labelled NLI file (``labelled-jsonl``, e.g.
``../shared/data/nli-public/train.jsonl``): every two rows with the same premise and different
hypotheses make one pair (the first row the original, the second the counterfactual, no label:
pooled on import). Used to build the large project ``bench_pages`` is measured on
(docs/workspace.md, "Measured: every researcher page").

    python scripts/nli_premise_pairs.py ../shared/data/nli-public/train.jsonl var/nli-pairs.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(src: str, dst: str) -> int:
    by_premise: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    with open(src, encoding="utf-8") as f:
        for i, line in enumerate(f):
            row = json.loads(line)
            by_premise[row["premise"]].append((i, row))
    n = 0
    with open(dst, "w", encoding="utf-8") as out:
        for premise, rows in by_premise.items():
            for i, a in rows:
                for j, b in rows:
                    if i == j or a["hypothesis"] == b["hypothesis"]:
                        continue
                    pair = {
                        "id": f"p{i}-{j}",
                        "group": f"o{i}",
                        "original": {
                            "fields": {"premise": premise, "hypothesis": a["hypothesis"]},
                            "label": a["label"],
                        },
                        "counterfactual": {
                            "fields": {"premise": premise, "hypothesis": b["hypothesis"]},
                            "target_label": b["label"],
                            "generator": "human",
                        },
                    }
                    out.write(json.dumps(pair) + "\n")
                    n += 1
    print(f"{n} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
