"""Redaction by name and by shape (issue 30, item 6): every credential of
the table is gone from argv, from the same argv as py-spy joins it with
spaces, and from it as one shell string (bash -c, an environment value);
allowed environment values are redacted the same; ordinary command lines
stay exactly as they were."""

import gzip
import shlex

import pytest
from secret_shapes import ARGV, ENV, KEEP, PEM

from writerprof.probes.writerprof_probe.identity import REDACTED, allowed_env, redact_argv, redact_value
from writerprof.probes.writerprof_probe.redact import redact_joined, secret_option
from writerprof.record.rawstacks import compress, process_chain
from writerprof.run.stacks import parse_lines


def _left(text, secrets):
    return [s for s in secrets if s in text]


@pytest.mark.parametrize("argv, secrets", ARGV, ids=[" ".join(a)[:60] for a, _ in ARGV])
def test_a_credential_is_gone_from_argv_however_it_is_given(argv, secrets):
    redacted = redact_argv(argv)
    assert not _left("\0".join(redacted), secrets), redacted
    assert REDACTED in "\0".join(redacted)
    assert len(redacted) == len(argv)  # one argument for one: the command stays readable
    joined = redact_joined(" ".join(argv))
    assert not _left(joined, secrets) and REDACTED in joined, joined
    line = redact_value(shlex.join(argv))
    assert not _left(line, secrets) and REDACTED in line, line


@pytest.mark.parametrize("name, value, secrets", ENV, ids=[n for n, _, _ in ENV])
def test_an_allowed_variable_keeps_its_name_but_not_its_credential(name, value, secrets):
    recorded = allowed_env({name: value})
    assert list(recorded) == [name]
    assert not _left(recorded[name], secrets) and REDACTED in recorded[name], recorded


@pytest.mark.parametrize("argv", KEEP, ids=[" ".join(a)[:60] for a in KEEP])
def test_an_ordinary_command_line_is_kept_whole(argv):
    assert redact_argv(argv) == argv
    assert redact_joined(" ".join(argv)) == " ".join(argv)
    assert redact_value(shlex.join(argv)) == shlex.join(argv)


def test_a_shell_string_keeps_its_text_but_the_credential():
    assert redact_argv(["bash", "-c", "cd /w && python3 x.py --password hunter4 --epochs 3"]) == [
        "bash", "-c", f"cd /w && python3 x.py --password {REDACTED} --epochs 3"]
    assert redact_argv(["ssh", "n1", "bash -c 'sshpass -p pw ssh n2 uptime'"]) == [
        "ssh", "n1", f"bash -c 'sshpass -p {REDACTED} ssh n2 uptime'"]
    assert redact_value("Authorization: Bearer abc") == f"Authorization: Bearer {REDACTED}"
    assert redact_argv(["sh", "-c", f"x --password a --key '{PEM}' --token b -v"]) == [
        "sh", "-c", f"x --password {REDACTED} --key '{REDACTED}' --token {REDACTED} -v"]


def test_a_url_keeps_its_user_host_and_other_parameters():
    assert redact_argv(["psql", "postgres://u:pw@h:5432/db?sslmode=require&sslpassword=x"]) == [
        "psql", f"postgres://u:{REDACTED}@h:5432/db?sslmode=require&sslpassword={REDACTED}"]


def test_a_joined_line_loses_a_spaced_credential_whole_and_keeps_the_next_option():
    assert redact_joined("python3 x.py --password correct horse --epochs 3") == \
        f"python3 x.py --password {REDACTED} --epochs 3"


def test_py_spy_raw_lines_lose_credentials_with_spaces_and_newlines_in_them(tmp_path):
    """A chain record puts on a one-process file, and a chain py-spy wrote."""
    raw = tmp_path / "7-000.raw"
    raw.write_bytes(b'main (x.py:1) 3\nprocess 5:"python3 y.py --password correct horse --epochs 3";main (y.py:1) 2\n')
    code = "import db\ndb.connect(password='pw1')"
    name = compress(raw, process_chain([(7, f"python3 -c {code} --key {PEM} --token tok2 -v")]))
    text = gzip.decompress((tmp_path / name).read_bytes()).decode()
    parsed, bad, tail = parse_lines(text)
    assert bad == 0 and tail is None and len(parsed) == 2
    assert [chain for chain, _, _ in parsed] == [
        [(7, f"python3 -c import db\\ndb.connect(password={REDACTED} --key {REDACTED} --token {REDACTED} -v")],
        [(7, f"python3 -c import db\\ndb.connect(password={REDACTED} --key {REDACTED} --token {REDACTED} -v"),
         (5, f"python3 y.py --password {REDACTED} --epochs 3")]]


@pytest.mark.parametrize("name", ["--password", "--db-password", "db_password", "dbPassword", "DB.PASSWORD",
                                  "--API_KEY", "--api-key", "apiKey", "sslpassword", "-passin", "storepass",
                                  "X-Auth-Token", "client_secret", "--key", "--token2", "Authorization"])
def test_secret_option_names(name):
    assert secret_option(name)


@pytest.mark.parametrize("name", ["--password-file", "--max-tokens", "--tokenizer", "--num-keys", "--author",
                                  "--passes", "--bypass", "--key-size", "--pin-memory", "--checkpoint-folder",
                                  "--num-ranks", "--access-key-id", "-p", "--keyfile"])
def test_not_secret_option_names(name):
    assert not secret_option(name)
