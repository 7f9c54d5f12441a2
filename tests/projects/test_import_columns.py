"""A csv/tsv whose columns do not match says which columns were expected and which were found,
and names the CAD format when the file is a CAD file (issue 20.1)."""

from __future__ import annotations

import pytest

from projects.formats import FormatError, read


def first_error(path, **kwargs):
    with pytest.raises(FormatError) as err:
        list(read("csv", [str(path)], task="nli", **kwargs))
    return str(err.value)


def test_a_cad_nli_tsv_given_as_csv_names_the_cad_format(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("sentence1\tsentence2\tgold_label\nA man sleeps.\tA man rests.\tentailment\n")
    message = first_error(path, text_fields=["premise", "hypothesis"])
    assert message.startswith(f"{path}:1: the header has no id column.")
    assert "Expected the columns id, premise, hypothesis, label (originals" in message
    assert "original.premise" in message and "counterfactual.hypothesis" in message
    assert "found sentence1, sentence2, gold_label." in message
    assert "This looks like a CAD file: choose the cad-nli format." in message


def test_a_cad_sentiment_tsv_names_its_format(tmp_path):
    path = tmp_path / "dev_paired.tsv"
    path.write_text("Sentiment\tText\tbatch_id\nPositive\tGreat film.\t1\n")
    message = first_error(path, text_fields=["text"])
    assert "choose the cad-sentiment format" in message and "found Sentiment, Text, batch_id" in message


def test_wrong_text_columns_list_expected_and_found(tmp_path):
    path = tmp_path / "originals.csv"
    path.write_text("id,sentence,label\no1,A film.,positive\n")
    message = first_error(path, text_fields=["text"])
    assert "text columns: missing field(s) text" in message
    assert "Expected the columns id, text, label" in message and "found id, sentence, label" in message
    assert "CAD" not in message
