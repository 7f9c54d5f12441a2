"""Whole-review reader batches (issue 31.1): edits marked the way an export's reader meets them,
a blind batch with controls, the readers' answers back as shares, and their agreement."""

from __future__ import annotations

from generation.services import review_batches as rb


def test_edits_are_marked_in_the_whole_review() -> None:
    before = "I loved this film. It was great, really.<br /><br />A very good cast."
    after = "I hated this film. It was terrible, really.<br /><br />A good cast."
    assert rb.marked(before, after) == (
        "I [[hated]] this film. It was [[terrible]], really.<br /><br />A [[deleted: very]] good cast."
    )
    assert rb.marked("It is good.", "It is really good.") == "It is [[really]] good."


def test_a_batch_is_blind_and_the_answers_come_back_as_reader_shares(tmp_path) -> None:
    rows = [
        {"key": "k1", "label": "positive", "original": "A great film.", "candidate": "A terrible film."},
        {"key": "k2", "label": "positive", "original": "A good cast.", "candidate": "A really good cast."},
    ]
    info = rb.write_batch(tmp_path, rows, [("c1", "A dull film.", "negative")], seed=1)
    assert info == {"lines": 3, "candidates": 2, "controls": 1}
    lines = (tmp_path / "batch.tsv").read_text().splitlines()
    assert len(lines) == 3 and all(line.split("\t")[1].startswith("REVIEW: ") for line in lines)
    assert "A [[terrible]] film." in (tmp_path / "batch.tsv").read_text()
    assert "lexical" not in (tmp_path / "batch.tsv").read_text()
    ckey = rb.control_key("c1")
    assert (tmp_path / "controls.tsv").read_text() == f"{ckey}\tnegative\n"
    (tmp_path / "reader1.tsv").write_text(f"k1\tnegative\tyes\nk2\tpositive\tyes\n{ckey}\tnegative\tyes\n")
    (tmp_path / "reader2.tsv").write_text(f"k1\tnegative\tno\nk2\tpositive\tyes\n{ckey}\tpositive\tyes\n")
    answers = [rb.read_answers(tmp_path / "reader1.tsv"), rb.read_answers(tmp_path / "reader2.tsv")]
    judged = rb.merge_readers(rows, answers, judged_on="t")
    assert [(r["valid"], r["flip"]) for r in judged] == [(0.5, 1.0), (1.0, 0.0)]
    agree = rb.agreement(answers, {ckey: "negative"}, ["k1", "k2"])
    assert [x["control_accuracy"] for x in agree["readers"]] == [1.0, 0.0]
    assert agree["label_agreement"] == 1.0 and agree["valid_agreement"] == 0.5
