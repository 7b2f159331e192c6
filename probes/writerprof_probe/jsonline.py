"""One journal event as a JSON line, as json.dumps(value, default=str) writes
it. The probe does not import json: its package imports re (and re enum,
functools, collections), which costs a bare interpreter ~4 ms of start-up,
more than the whole probe. Strings that need escaping go through the C
escaper json itself uses (where that is missing, json's own), loaded at the
first such string: most never need it, and a shared library costs ~0.4 ms
of a start-up."""

_escape = []  # the escaper, once loaded


def _string(value):
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return '"' + value + '"'  # (concatenated: a str subclass's own __str__ is not called, as json does)
    if not _escape:
        try:
            from _json import encode_basestring_ascii
        except ImportError:  # not CPython
            from json.encoder import encode_basestring_ascii
        _escape.append(encode_basestring_ascii)
    return _escape[0](value)


_CONSTANTS = {True: "true", False: "false", None: "null"}


def dumps(value):
    parts = []
    _encode(value, parts.append)
    return "".join(parts)


def _float(value):
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key(key):
    if isinstance(key, str):
        return _string(key)
    if key is True or key is False or key is None:
        return '"%s"' % _CONSTANTS[key]
    if isinstance(key, int):
        return '"%s"' % int.__repr__(key)
    if isinstance(key, float):
        return '"%s"' % _float(key)
    raise TypeError("keys must be str, int, float, bool or None, not %s" % type(key).__name__)


def _encode(value, out):
    if isinstance(value, str):
        out(_string(value))
    elif value is None or value is True or value is False:
        out(_CONSTANTS[value])
    elif isinstance(value, int):
        out(int.__repr__(value))
    elif isinstance(value, float):
        out(_float(value))
    elif isinstance(value, dict):
        out("{")
        first = True
        for key, item in value.items():
            if not first:
                out(", ")
            first = False
            out(_key(key))
            out(": ")
            _encode(item, out)
        out("}")
    elif isinstance(value, (list, tuple)):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(", ")
            _encode(item, out)
        out("]")
    else:  # default=str
        out(_string(str(value)))
