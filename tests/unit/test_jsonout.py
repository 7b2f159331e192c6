"""The JSON writerprof writes means what json.dumps's would, whichever
encoder made it; NaN and the infinities are null, as JSON has them."""

import json
import math
import sys

import orjson

from writerprof import jsonout
from writerprof.analysis import summary
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run


def test_a_summary_is_orjson_s_and_means_what_json_s_does(tmp_path):
    write_run(tmp_path / "run", Scenario(hosts=2, ranks_per_host=2, saves=2, chunks_per_save=4))
    made = summary.summarize(load(tmp_path / "run"))
    made["run"]["command"] = ["é", 1.5e-7, None, 1 << 40, {1: "one"}]
    out = jsonout.dumps(made)
    assert out == orjson.dumps(made, option=orjson.OPT_NON_STR_KEYS)  # not the fallback
    assert json.loads(out) == json.loads(json.dumps(made))
    assert "é".encode() in out  # UTF-8, not \\u00e9


def test_non_finite_floats_are_null_from_either_encoder():
    document = {"nan": math.nan, "inf": [math.inf, -math.inf], "x": (0.5,)}
    assert json.loads(jsonout.dumps(document)) == {"nan": None, "inf": [None, None], "x": [0.5]}
    document["name"] = "run-\udce9"  # a byte that was not UTF-8: orjson refuses it, json writes it
    out = jsonout.dumps(document)
    assert out.isascii() and b"\\udce9" in out
    assert json.loads(out) == {"nan": None, "inf": [None, None], "x": [0.5], "name": "run-\udce9"}


def test_an_int_beyond_64_bits_is_written_whole():
    assert json.loads(jsonout.dumps({"big": [1 << 70, -(1 << 64)], 2: "two"})) == {"big": [1 << 70, -(1 << 64)],
                                                                                  "2": "two"}


def test_standard_output_gets_utf_8_whatever_its_encoding(capsysbinary):
    sys.stdout.reconfigure(encoding="ascii")
    print("before", end=" ")
    jsonout.write_stdout({"name": "é"})
    assert capsysbinary.readouterr().out == 'before {"name":"é"}\n'.encode()


def test_a_stream_of_text_alone_gets_the_text(monkeypatch):
    import io

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    jsonout.write_stdout({"name": "é", "x": [1.5]})
    assert out.getvalue() == '{"name":"é","x":[1.5]}\n'
