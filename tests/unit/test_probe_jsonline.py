"""The probe's JSON lines are what json.dumps(value, default=str) writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from writerprof.probes.writerprof_probe import jsonline

VALUES = [
    {"kind": "process", "t_ns": 123, "argv": ["python", "-c", "pass"], "env": {"A": "b"}},
    {"nested": {"list": [1, 2.5, None, True, False, [], {}], "tuple": (1, "two")}},
    {"text": "é ü ∑ \U0001f600 \"quoted\" back\\slash \n\t\x00\x1f"},
    {"surrogate": "caf\udce9", "argv": ["\udcff\udcfe"]},  # non-UTF-8 bytes, surrogateescape'd
    {1: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "big": 1 << 70, "neg": -5, "f": 0.1},
    {"path": Path("/tmp/x"), "object": object, "bytes": b"raw"},  # default=str
    [], "just a string", 7, None,
]


@pytest.mark.parametrize("value", VALUES)
def test_same_text_as_json(value):
    assert jsonline.dumps(value) == json.dumps(value, default=str)


def test_round_trips_through_the_loader_s_json():
    value = VALUES[0]
    assert json.loads(jsonline.dumps(value)) == value


def test_an_unusable_key_is_refused_as_json_refuses_it():
    with pytest.raises(TypeError):
        json.dumps({(1, 2): 3}, default=str)
    with pytest.raises(TypeError):
        jsonline.dumps({(1, 2): 3})


@given(st.text() | st.from_regex(r"[ -~]*", fullmatch=True))
def test_any_string_is_escaped_as_json_escapes_it(text):
    # Plain printable ASCII takes the probe's own path, the rest json's escaper.
    assert jsonline.dumps({text: [text]}) == json.dumps({text: [text]})


def test_a_str_subclass_is_written_as_its_text_not_its_str():
    class Odd(str):
        def __str__(self):
            return "other"

    assert jsonline.dumps([Odd("plain"), Odd("é")]) == json.dumps([Odd("plain"), Odd("é")])
