"""The HTTP the interposer recognizes in a socket call's data
(probes/interposer/http.c), its C run by a driver (http_lines.c) built with
AddressSanitizer: a request's method and target with only the query keys
that say which request of which upload it is (a presigned URL's
signature, credential and token dropped), its Content-Length, a response's
status; and on every prefix of every case no byte read past the data nor
written past the output."""

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from writerprof.probes.writerprof_probe import iofile

INTERPOSER = Path(iofile.__file__).parents[1] / "interposer"
DRIVER = Path(__file__).with_name("http_lines.c")
CAP = 16  # the driver's short output
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]

PRESIGNED = ("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLECRED01%2F20260101%2Fus-east-1%2Fs3"
             "%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
             "&X-Amz-Security-Token=session-token-secret-02&X-Amz-Signature=0123456789abcdefsignature03")
SECRETS = ("AKIAEXAMPLECRED01", "session-token-secret-02", "signature03")


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (the interposer is built with one)")
    out = tmp_path_factory.mktemp("http") / "http_lines"
    sources = [str(DRIVER), str(INTERPOSER / "http.c"), "-I", str(INTERPOSER), "-o", str(out)]
    built = subprocess.run([cc, "-O1", "-g", *SANITIZERS, *sources], capture_output=True, text=True)
    if built.returncode != 0:  # no sanitizer runtime with this compiler: the cases checked, the bounds not
        built = subprocess.run([cc, "-O1", "-g", *sources], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return out


def lines(driver, *cases: bytes) -> list[tuple[int, int, int, int, bytes]]:
    """(text length, Content-Length, status, capped text length, text) per case."""
    data = b"".join(struct.pack("<I", len(c)) + c for c in cases)
    done = subprocess.run([str(driver)], input=data, capture_output=True, timeout=120,
                          env={"ASAN_OPTIONS": "detect_leaks=0"})
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    out = []
    for line in done.stdout.split(b"\n")[:-1]:
        length, content, status, capped, text = line.split(b" ", 4)
        out.append((int(length), int(content), int(status), int(capped), text))
    assert len(out) == len(cases)
    return out


def request(driver, data: bytes) -> tuple[str, int]:
    (length, content, status, capped, text), = lines(driver, data)
    assert length == len(text) and status == 0 and capped == min(length, CAP)
    return text.decode(), content


def test_a_presigned_urls_secrets_are_dropped_and_an_uploads_keys_kept(driver):
    put = f"PUT /bucket/ckpt/model-1.pt?{PRESIGNED} HTTP/1.1\r\nHost: s3\r\nContent-Length: 1048576\r\n\r\nbody"
    assert request(driver, put.encode()) == ("PUT /bucket/ckpt/model-1.pt", 1048576)
    part = f"PUT /b/k?partNumber=3&{PRESIGNED}&uploadId=2~AbC-_x.Y HTTP/1.1\r\ncontent-length:  5242880 \r\n\r\n"
    assert request(driver, part.encode()) == ("PUT /b/k?partNumber=3&uploadId=2~AbC-_x.Y", 5242880)
    assert request(driver, b"POST /b/k?uploads HTTP/1.1\r\n\r\n") == ("POST /b/k?uploads", -1)
    assert request(driver, b"POST /b/k?uploads= HTTP/1.1\r\n\r\n") == ("POST /b/k?uploads=", -1)
    complete = f"POST /b/k?uploadId=u1&{PRESIGNED} HTTP/1.1\r\nCONTENT-LENGTH: 120\r\n\r\n<Complete".encode()
    assert request(driver, complete) == ("POST /b/k?uploadId=u1", 120)
    assert request(driver, b"POST /b?delete HTTP/1.1\r\n\r\n") == ("POST /b?delete", -1)
    assert request(driver, b"GET /b/k?x-id=GetObject&token=t0k&versionId=7 HTTP/1.1\r\n\r\n") == ("GET /b/k", -1)
    assert request(driver, b"HEAD /b/k HTTP/1.0\r\n\r\n") == ("HEAD /b/k", -1)
    assert request(driver, b"DELETE /b/k?uploadId=u2#frag HTTP/1.1\r\n\r\n") == ("DELETE /b/k?uploadId=u2", -1)
    # Keys that only look like a kept one, and a kept one's case changed, are dropped.
    look_alike = b"PUT /b/k?uploadIdX=1&uploads2&UPLOADID=3&partnumber=4&partNumber=5 HTTP/1.1\r\n\r\n"
    assert request(driver, look_alike) == ("PUT /b/k?partNumber=5", -1)
    # Through a proxy: the absolute URL's authority without its user:password@.
    proxied = b"PUT http://alice:pa55word@store.example:8080/b/k?Signature=s&uploadId=9 HTTP/1.1\r\n\r\n"
    assert request(driver, proxied) == ("PUT http://store.example:8080/b/k?uploadId=9", -1)


def test_the_content_length_is_the_headers_whole_value_or_unknown(driver):
    head = b"PUT /b/k HTTP/1.1\r\nHost: s3\r\n"
    for headers, expected in ((b"Content-Length: 12\r\n\r\n", 12), (b"Content-Length:12\n\n", 12),
                              (b"Content-Length: 12", -1),  # the data ends in its line: maybe in its value
                              (b"Content-Length: 12x\r\n\r\n", -1), (b"Content-Length: \r\n\r\n", -1),
                              (b"Content-Length: 1234567890123456789\r\n\r\n", -1),  # more than 18 digits
                              (b"Transfer-Encoding: chunked\r\n\r\n", -1),
                              (b"\r\nContent-Length: 12\r\n\r\n", -1)):  # after the headers' end: the body's
        assert request(driver, head + headers) == ("PUT /b/k", expected), headers


def test_an_aws_chunked_body_counts_its_decoded_length(driver):
    """botocore over HTTPS frames a part's body aws-chunked: its Content-Length is the framing's, the
    object's bytes are x-amz-decoded-content-length's, wherever in the headers either is."""
    head = b"PUT /b/k?partNumber=1&uploadId=u HTTP/1.1\r\n"
    for headers in (b"Content-Length: 8390258\r\nX-Amz-Decoded-Content-Length: 8388608\r\n\r\n",
                    b"x-amz-decoded-content-length: 8388608\r\nContent-Encoding: aws-chunked\r\n"
                    b"Content-Length: 8390258\r\n\r\n"):
        assert request(driver, head + headers)[1] == 8388608, headers
    cut = b"Content-Length: 8390258\r\nX-Amz-Decoded-Content-Length: 83"  # its line cut: the wire's length
    assert request(driver, head + cut)[1] == 8390258


def test_what_is_no_request_line(driver):
    for data in (b"PUTTING /b HTTP/1.1\r\n", b"put /b/k HTTP/1.1\r\n", b"PATCH /b/k HTTP/1.1\r\n",
                 b"PUT /b/k HTTP/2\r\n", b"PUT /b/k\r\n", b"PUT /b/k", b"PUT  /b/k HTTP/1.1\r\n",
                 b"PUT b/k HTTP/1.1\r\n", b"GET /a\x00b HTTP/1.1\r\n", b"GET /a\tb HTTP/1.1\r\n",
                 b"HTTP/1.1 200 OK\r\n", b"\x16\x03\x01\x02\x00PUT /x HTTP/1.1", b""):
        (length, _, _, capped, text), = lines(driver, data)
        assert (length, capped, text) == (0, 0, b""), data


def test_the_text_is_capped(driver):
    long_path = b"/b/" + b"k" * 10_000
    (length, content, _, capped, text), = lines(driver, b"PUT " + long_path + b" HTTP/1.1\r\nContent-Length: 5\r\n\r\n")
    assert length == iofile.REQUEST_TEXT_MAX and text == (b"PUT " + long_path)[:iofile.REQUEST_TEXT_MAX]
    assert capped == CAP and content == 5


def test_a_status_line(driver):
    cases = (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", b"HTTP/1.0 404\r\n", b"HTTP/1.1 100 Continue\r\n\r\n",
             b"HTTP/1.1 503", b"HTTP/2 200 OK\r\n", b"HTTP/1.1 20", b"HTTP/1.1 2000 OK\r\n", b"http/1.1 200 OK\r\n",
             b"HTTP/1.1 2x0 OK\r\n", b"PUT /b/k HTTP/1.1\r\n")
    assert [status for _, _, status, _, _ in lines(driver, *cases)] == [200, 404, 100, 503, 0, 0, 0, 0, 0, 0]


def test_no_secret_of_a_presigned_url_in_any_output(driver):
    cases = [f"{m} /b/k?{PRESIGNED}&uploadId=u HTTP/1.1\r\n\r\n".encode() for m in iofile.REQUEST_METHODS]
    cases.append(f"PUT https://u:p@h/b/k?{PRESIGNED} HTTP/1.1\r\n\r\n".encode())
    found = lines(driver, *cases)
    assert all(length for length, *_ in found)
    for *_, text in found:
        assert not any(secret.encode() in text for secret in SECRETS) and b"X-Amz" not in text
