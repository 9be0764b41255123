"""scripts/prose_numbers.py: after a re-execution, which numbers the prose quotes from the outputs have changed."""

import json

import pytest

from notebook_tools import load_script


@pytest.fixture(scope="module")
def prose():
    return load_script("prose_numbers")


def notebook(table: str, prose_text: str) -> dict:
    return {"cells": [
        {"cell_type": "code", "id": "time", "outputs": [{"output_type": "stream", "name": "stdout", "text": table}]},
        {"cell_type": "markdown", "id": "read", "source": prose_text},
    ]}


TABLE = ("kernel      TFLOP/s   step  of cuBLAS\n"
         "tc_inner      481.4          64.5%\n"
         "tc_tma      1,030.4  1.10x      71.1%\n")


def test_a_quoted_number_is_followed_to_its_new_value(prose):
    before = notebook(TABLE, "It runs 1,030.4 TFLOP/s, 1.10× the step before, 71.1% of cuBLAS; chapter 7 said 92.1%.")
    after = notebook(TABLE.replace("1,030.4", "1,012.9").replace("71.1%", "70.2%"), before["cells"][1]["source"])
    found = {q.value: q for q in prose.quotes(before, after)}
    assert set(found) == {"1,030.4", "1.10", "71.1"}, "92.1 is in no output: cited, not checked"
    assert found["1,030.4"].now == "1,012.9" and found["1,030.4"].changed
    assert found["71.1"].now == "70.2" and found["71.1"].place == ("time", 2, 2)
    assert found["1.10"].now == "1.10" and not found["1.10"].changed


def test_digits_inside_names_are_not_numbers(prose):
    found = prose.NUMBER.findall("HGMMA.64 sm_90a v0.2.0 sha256:9436a 8192^3 2.5 and 1,070.5, 1.10x and 12.")
    assert found == ["8192", "3", "2.5", "1,070.5", "1.10", "12"]


def test_the_command_fails_when_a_quote_changed(prose, tmp_path, capsys):
    old, new = tmp_path / "old.ipynb", tmp_path / "new.ipynb"
    old.write_text(json.dumps(notebook(TABLE, "At 481.4 TFLOP/s.")))
    new.write_text(json.dumps(notebook(TABLE, "At 481.4 TFLOP/s.")))
    assert prose.main([str(new), "--before", str(old)]) == 0
    new.write_text(json.dumps(notebook(TABLE.replace("481.4", "479.0"), "At 481.4 TFLOP/s.")))
    assert prose.main([str(new), "--before", str(old)]) == 1
    assert "481.4 -> 479.0" in capsys.readouterr().out
