"""An HTTP client: one PUT with http.client to 127.0.0.1:PORT (HTTPS with
--cafile) of BODY_FILE's bytes, its target read from TARGET_FILE (so that
no query string of it is in this process's argv). Prints the status and
what the server answered, and exits with --exit."""

import argparse
import http.client
import ssl
import sys

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("target_file")
parser.add_argument("body_file")
parser.add_argument("--cafile")
parser.add_argument("--exit", type=int, default=0)
args = parser.parse_args()

with open(args.target_file) as f:
    target = f.read().strip()
with open(args.body_file, "rb") as f:
    body = f.read()
if args.cafile:
    connection = http.client.HTTPSConnection("127.0.0.1", args.port, timeout=60,
                                             context=ssl.create_default_context(cafile=args.cafile))
else:
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
connection.request("PUT", target, body=body)
response = connection.getresponse()
print(response.status, response.read().decode())
connection.close()
sys.exit(args.exit)
