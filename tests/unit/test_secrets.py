"""Credentials never leave a process through the probe's identity line:
secret names are dropped, credential-looking values and secret arguments redacted."""

import pytest

from writerprof.probes.writerprof_probe.identity import REDACTED, allowed_env, redact_argv, redact_value

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyYW5rMCJ9.c2lnbmF0dXJlLW5vdC1yZWFs"
PEM = "-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-----END PRIVATE KEY-----"
B64 = "QWxhZGRpbjpvcGVuIHNlc2FtZSBmb3IgdGhlIHRlc3Qgb25seSAxMjM0NTY3OA=="
HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


@pytest.mark.parametrize("name", ["SLURM_JWT", "SLURM_DB_PW", "SLURM_DB_PWD", "OMPI_MCA_btl_tcp_psk",
                                  "OMPI_MCA_ofi_PSK_FILE", "PMIX_PRIVATE_THING", "SLURM_CERT_FILE",
                                  "MPI_CREDENTIAL", "SLURM_SIGNATURE", "OMPI_APIKEY", "OMPI_API_KEY",
                                  "SLURM_TOKEN", "PYTHON_PASSWORD", "SLURM_COOKIE"])
def test_secret_names_are_left_out_even_under_an_allowed_prefix(name):
    assert allowed_env({name: "x"}) == {}


@pytest.mark.parametrize("value", [JWT, PEM, B64, HEX])
def test_credential_values_are_redacted_under_allowed_names(value):
    assert allowed_env({"SLURM_JOB_COMMENT": value}) == {"SLURM_JOB_COMMENT": REDACTED}
    assert allowed_env({"OMPI_MCA_x": f"a,{value}"}) == {"OMPI_MCA_x": f"a,{REDACTED}"}


def test_a_url_keeps_its_user_and_host_but_not_its_password():
    assert redact_value("https://alice:hunter2@store.example/bucket") == \
        f"https://alice:{REDACTED}@store.example/bucket"
    assert redact_value("https://store.example/bucket") == "https://store.example/bucket"


@pytest.mark.parametrize("value", [
    "/work/venv/lib/python3.11/site-packages:/work/main/probes",  # paths
    "0-191", "4", "spread", "cores", "1234567890123456789012345678901234567890",  # lists and numbers
    "tcp://10.0.0.1:5000", "writerprof.repro.save:_Save._put=put",
    "OMPI_MCA_mca_base_env_list;WRITERPROF_RUN;PYTHONPATH",
])
def test_ordinary_values_are_kept(value):
    assert redact_value(value) == value


def test_argv_redacts_secret_options_parameters_and_tokens():
    argv = ["python", "bench.py", "--password", "hunter2", "--token=abc", "--key", "k1", "--secret", "s",
            "storage.secret_key=AKIAXYZ", "db_pw=pw1", "--saves", "4", "--size=512MiB", JWT,
            "--multiprocessing-fork", "tracker_fd=5", "pipe_handle=7"]
    assert redact_argv(argv) == [
        "python", "bench.py", "--password", REDACTED, f"--token={REDACTED}", "--key", REDACTED,
        "--secret", REDACTED, f"storage.secret_key={REDACTED}", f"db_pw={REDACTED}", "--saves", "4",
        "--size=512MiB", REDACTED, "--multiprocessing-fork", "tracker_fd=5", "pipe_handle=7"]


def test_the_forkserver_command_line_is_kept_whole():
    argv = ["/usr/bin/python3", "-c", "from multiprocessing.forkserver import main; main(8, 9, ['__main__'], "
            "**{'sys_path': ['/work/main', '/usr/lib/python3.11'], 'main_path': '/work/bench.py'})"]
    assert redact_argv(argv) == argv
