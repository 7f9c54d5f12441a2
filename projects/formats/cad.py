"""Readers for the counterfactually-augmented data of Kaushik, Hovy & Lipton (ICLR 2020),
in the layout published at github.com/acmi-lab/counterfactually-augmented-data.

``cad-nli`` (PATH is the ``cad/`` directory, or its ``NLI/`` directory):

- ``NLI/original/{split}.tsv``: ``sentence1 \\t sentence2 \\t gold_label`` with a header.
- ``NLI/revised_premise/{split}.tsv`` / ``NLI/revised_hypothesis/{split}.tsv``: for original
  *i* (0-based, data rows only), rows 2i and 2i+1 revise the premise / the hypothesis.

For every original the reader yields an :class:`OriginalRecord` (id ``snli-{split}-{i}``)
followed by its four :class:`PairRecord`\\ s (ids ``…-rp0``, ``…-rp1``, ``…-rh0``, ``…-rh1``),
each of which embeds the same original. A revised row is checked against its original: the
sentence that was *not* revised must equal the original's once whitespace is normalised
(runs of spaces count as one; the texts are kept as published, and a row that differs only
in whitespace is reported through ``warn``). A row that does not align is not yielded and is
reported through ``warn`` too (``file:line: misaligned, skipped: …``): the published train
split has one (revised_premise/train.tsv:1619), and a data set's own misalignment should not
block importing the rest. Rows with the wrong column count or an unknown label are
:class:`Problem`\\ s.

``cad-sentiment`` (PATH is the ``cad/`` directory, its ``sentiment/`` directory, or the
``{split}_paired.tsv`` file itself): ``Sentiment \\t Text \\t batch_id`` (CSV-quoted); the two
rows sharing a ``batch_id`` are an original and its revision. The first row is taken as the
original. Yields one :class:`PairRecord` per batch (id ``imdb-{split}-{batch_id}-cf``, group
= the original's id ``imdb-{split}-{batch_id}``); the originals are embedded in the pairs.

Counterfactual labels are the human-written gold labels (``label_source="gold"``); the
generator is ``"human"``; ``perturbation`` and ``target_label`` are left empty.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Iterator

from projects.formats.reading import (
    TASK_FIELDS,
    TASK_LABELS,
    FormatError,
    LabelMap,
    iter_lines,
)
from projects.formats.records import OriginalRecord, PairRecord, Problem, Record

NLI_FIELDS = TASK_FIELDS["nli"]
SENTIMENT_FIELDS = TASK_FIELDS["sentiment"]


def _need_split(split: str) -> str:
    if not split:
        raise FormatError("this format needs --split (train, dev or test)")
    return split


def nli_files(path: str, split: str) -> dict[str, str]:
    """The three files of one split: ``{"original": …, "revised_premise": …, "revised_hypothesis": …}``."""
    split = _need_split(split)
    base = os.path.join(path, "NLI") if os.path.isdir(os.path.join(path, "NLI")) else path
    files = {
        part: os.path.join(base, part, f"{split}.tsv") for part in ("original", "revised_premise", "revised_hypothesis")
    }
    for fname in files.values():
        if not os.path.isfile(fname):
            raise FormatError(
                f"{fname}: file not found (is {path} the cad/ directory, and does split {split!r} exist?)"
            )
    return files


def sentiment_file(path: str, split: str) -> str:
    if os.path.isfile(path):
        return path
    split = _need_split(split)
    for candidate in (
        os.path.join(path, "sentiment", "combined", "paired", f"{split}_paired.tsv"),
        os.path.join(path, "combined", "paired", f"{split}_paired.tsv"),
        os.path.join(path, f"{split}_paired.tsv"),
    ):
        if os.path.isfile(candidate):
            return candidate
    raise FormatError(
        f"{os.path.join(path, 'sentiment', 'combined', 'paired', f'{split}_paired.tsv')}: file not found "
        f"(is {path} the cad/ directory, and does split {split!r} exist?)"
    )


def _check_fields(text_fields: list[str] | None, expected: list[str], fmt: str) -> None:
    if text_fields is not None and list(text_fields) != expected:
        raise FormatError(f"{fmt} has the text fields {', '.join(expected)}, not {', '.join(text_fields)}")


class _TsvRows:
    """Data rows of a TSV file with a header: ``(line, [cols]) | Problem``.

    The CAD NLI files quote a field the way Excel's ``excel-tab`` dialect does: a field that
    holds a double quote is wrapped in quotes and its quotes are doubled
    (``"The company ""Camden""."``). Each line is one row (no field spans lines), so every
    line is parsed on its own with :mod:`csv` in that dialect; an unquoted field is kept as is."""

    def __init__(self, path: str, *, header: list[str], max_line_bytes: int) -> None:
        self.path = path
        self._lines = iter_lines(path, max_line_bytes=max_line_bytes)
        first = next(self._lines, None)
        if first is None:
            raise FormatError(f"{path}: file is empty (expected the header {chr(9).join(header)})")
        _lineno, text = first
        if isinstance(text, Problem):
            raise FormatError(str(text))
        cols = text.rstrip("\r\n").split("\t")
        if [c.strip().lower() for c in cols] != [h.lower() for h in header]:
            raise FormatError(f"{path}:1: expected the header {' | '.join(header)}, found {' | '.join(cols)}")

    def next(self) -> tuple[int, list[str]] | Problem | None:
        for lineno, text in self._lines:
            if isinstance(text, Problem):
                return text
            line = text.rstrip("\r\n")
            if not line.strip():
                continue  # blank lines (e.g. at the end) are not rows
            cols = _tsv_fields(line)
            if len(cols) != 3:
                return Problem(self.path, lineno, f"expected 3 tab-separated columns, found {len(cols)}")
            return lineno, cols
        return None


def _tsv_fields(line: str) -> list[str]:
    """One TSV line's fields, unquoted in the ``excel-tab`` dialect (doubled quotes become one)."""
    if '"' not in line:
        return line.split("\t")
    return next(csv.reader([line], dialect="excel-tab"))


def read_nli(
    paths: list[str],
    *,
    split: str,
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    max_line_bytes: int,
    label_map: dict[str, str] | None = None,
    warn: Callable[[Problem], None] | None = None,
    image_root: str | None = None,
    image_base: str | None = None,
) -> Iterator[Record]:
    _check_fields(text_fields, NLI_FIELDS, "cad-nli")
    label_of = LabelMap(labels if labels is not None else TASK_LABELS["nli"], label_map)
    header = ["sentence1", "sentence2", "gold_label"]
    for path in paths:
        files = nli_files(path, split)
        original = _TsvRows(files["original"], header=header, max_line_bytes=max_line_bytes)
        revised = {
            "premise": _TsvRows(files["revised_premise"], header=header, max_line_bytes=max_line_bytes),
            "hypothesis": _TsvRows(files["revised_hypothesis"], header=header, max_line_bytes=max_line_bytes),
        }
        i = -1
        while True:
            row = original.next()
            if row is None:
                break
            i += 1
            orig: OriginalRecord | None = None
            if isinstance(row, Problem):
                yield row
            else:
                lineno, (premise, hypothesis, raw_label) = row
                try:
                    label = label_of(raw_label)
                except ValueError as exc:
                    yield Problem(original.path, lineno, str(exc))
                else:
                    orig = OriginalRecord(
                        id=f"snli-{split}-{i}",
                        fields={"premise": premise, "hypothesis": hypothesis},
                        label=label,
                        source="cad-nli",
                        split=split,
                    )
                    yield orig
            for part, rows in revised.items():
                kept = "hypothesis" if part == "premise" else "premise"
                for k in range(2):
                    rev = rows.next()
                    if rev is None:
                        yield Problem(
                            rows.path, 0, f"file ends early: no revised row {k} for original {i} ({original.path})"
                        )
                        continue
                    if isinstance(rev, Problem):
                        yield rev
                        continue
                    rlineno, (rp, rh, rlabel) = rev
                    if orig is None:
                        yield Problem(rows.path, rlineno, f"skipped: its original (row {i}) could not be read")
                        continue
                    cf_fields = {"premise": rp, "hypothesis": rh}
                    if cf_fields[kept] != orig.fields[kept]:
                        where = (
                            f"the unrevised {kept} {cf_fields[kept]!r} %s the {kept} of original "
                            f"{orig.id} ({original.path}:{i + 2}) {orig.fields[kept]!r}"
                        )
                        if " ".join(cf_fields[kept].split()) != " ".join(orig.fields[kept].split()):
                            if warn is not None:
                                warn(Problem(rows.path, rlineno, "misaligned, skipped: " + where % "is not"))
                            continue
                        # Aligned once whitespace is normalised (the published train split has
                        # a few double spaces): kept as published, reported as a warning.
                        if warn is not None:
                            warn(
                                Problem(
                                    rows.path,
                                    rlineno,
                                    "aligned up to whitespace: " + where % "differs only in whitespace from",
                                )
                            )
                    try:
                        cf_label = label_of(rlabel)
                    except ValueError as exc:
                        yield Problem(rows.path, rlineno, str(exc))
                        continue
                    yield PairRecord(
                        id=f"{orig.id}-r{part[0]}{k}",
                        original=orig,
                        cf_fields=cf_fields,
                        group=orig.id,
                        cf_label=cf_label,
                        generator="human",
                        label_source="gold",
                        meta={"revised": part},
                    )
        for rows in revised.values():
            extra = rows.next()
            if extra is not None:
                at = extra if isinstance(extra, Problem) else Problem(rows.path, extra[0], "")
                yield Problem(at.path, at.line, f"extra revised row: {original.path} has only {i + 1} originals")


def read_sentiment(
    paths: list[str],
    *,
    split: str,
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    max_line_bytes: int,
    label_map: dict[str, str] | None = None,
    warn: Callable[[Problem], None] | None = None,
    image_root: str | None = None,
    image_base: str | None = None,
) -> Iterator[Record]:
    _check_fields(text_fields, SENTIMENT_FIELDS, "cad-sentiment")
    label_of = LabelMap(labels if labels is not None else TASK_LABELS["sentiment"], label_map)
    for path in paths:
        fname = sentiment_file(path, split)
        tag = split or os.path.basename(fname).split("_")[0]
        rows = csv_rows(fname, max_line_bytes=max_line_bytes)
        header = next(rows, None)
        if header is None:
            raise FormatError(f"{fname}: file is empty (expected the header Sentiment, Text, batch_id)")
        if isinstance(header, Problem) or [c.strip().lower() for c in header[1]] != ["sentiment", "text", "batch_id"]:
            found = str(header) if isinstance(header, Problem) else " | ".join(header[1])
            raise FormatError(f"{fname}:1: expected the header Sentiment | Text | batch_id, found {found}")
        pending: dict[str, tuple[int, str, str]] = {}  # batch_id -> (line, label, text) of the first row
        done: set[str] = set()
        for row in rows:
            if isinstance(row, Problem):
                yield row
                continue
            lineno, cols = row
            if len(cols) == 1 and not cols[0].strip():
                continue
            if len(cols) != 3:
                yield Problem(fname, lineno, f"expected 3 tab-separated columns, found {len(cols)}")
                continue
            raw_label, text, batch = cols[0], cols[1], cols[2].strip()
            try:
                label = label_of(raw_label)
            except ValueError as exc:
                yield Problem(fname, lineno, str(exc))
                done.add(batch)  # its partner cannot form a pair either
                pending.pop(batch, None)
                continue
            if not batch:
                yield Problem(fname, lineno, "empty batch_id")
                continue
            if batch in done:
                yield Problem(fname, lineno, f"batch_id {batch} already has two rows (or its first row was bad)")
                continue
            if batch not in pending:
                pending[batch] = (lineno, label, text)
                continue
            _first_line, first_label, first_text = pending.pop(batch)
            done.add(batch)
            orig = OriginalRecord(
                id=f"imdb-{tag}-{batch}",
                fields={"text": first_text},
                label=first_label,
                source="cad-sentiment",
                split=split,
                meta={"batch_id": batch},
            )
            yield PairRecord(
                id=f"{orig.id}-cf",
                original=orig,
                cf_fields={"text": text},
                group=orig.id,
                cf_label=label,
                generator="human",
                label_source="gold",
                meta={"batch_id": batch},
            )
        for batch, (lineno, _, _) in pending.items():
            yield Problem(fname, lineno, f"batch_id {batch} has only one row (no revision to pair it with)")


def csv_rows(path: str, *, max_line_bytes: int, delimiter: str = "\t") -> Iterator[tuple[int, list[str]] | Problem]:
    """CSV/TSV records with the line each starts on; bad lines become Problems."""
    feed = _LineFeed(iter_lines(path, max_line_bytes=max_line_bytes))
    csv.field_size_limit(max(max_line_bytes, 131072))
    reader = csv.reader(feed, delimiter=delimiter, strict=True)
    while True:
        start = feed.lineno + 1
        try:
            cols = next(reader)
        except StopIteration:
            yield from feed.take_problems()
            return
        except csv.Error as exc:
            yield from feed.take_problems()
            yield Problem(path, start, f"malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({exc})")
            continue
        problems = feed.take_problems()
        if problems:
            # A bad line inside (or right before) this record: report it; the record is
            # still good if it starts after the bad line.
            yield from problems
            start = max(start, problems[-1].line + 1)
        yield start, cols


class _LineFeed:
    """Feeds decoded lines to ``csv.reader`` and keeps the lines it could not decode aside."""

    def __init__(self, lines: Iterator[tuple[int, str | Problem]]) -> None:
        self._lines = lines
        self.lineno = 0
        self._problems: list[Problem] = []

    def __iter__(self) -> _LineFeed:
        return self

    def __next__(self) -> str:
        while True:
            lineno, item = next(self._lines)
            self.lineno = lineno
            if isinstance(item, Problem):
                self._problems.append(item)
                continue
            return item

    def take_problems(self) -> list[Problem]:
        out, self._problems = self._problems, []
        return out
