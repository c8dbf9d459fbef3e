#!/usr/bin/env python3
"""Example receiver of Furrow webhook deliveries, standard library only.

It verifies either signature of a delivery over the raw body bytes:

* X-Service-Signature: t=<epoch ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">,
  keyed with the UTF-8 bytes of the whole secret (whsec_ included);
* webhook-signature (Standard Webhooks): v1,<base64 HMAC-SHA256 of
  "<webhook-id>.<webhook-timestamp>.<body>">, keyed with the base64 decoding
  of the secret after its whsec_ prefix;

rejects timestamps more than 5 minutes from now, acknowledges at once with
204, and drops events it has seen (deliveries are at-least-once, and a
captured delivery replayed within those 5 minutes verifies again).

It reads a body only with a valid Content-Length of at most MAX_BODY bytes
(1 MiB): a missing, malformed or negative one is 400, a larger one 413.
Each read or write on a connection waits at most TIMEOUT seconds (10), so
a client that stops sending cannot hold a thread.

WEBHOOK_SECRET holds one secret, or several separated by commas while a
secret is rotated: a delivery signed with any of them is accepted.

    WEBHOOK_SECRET=whsec_... python3 receiver.py --port 9000
    WEBHOOK_SECRET=whsec_new...,whsec_old... python3 receiver.py --port 9000
    python3 receiver.py --check-vectors ../../webhook/testdata/signature-vectors.json
"""

import argparse
import base64
import binascii
import collections
import hashlib
import hmac
import http.server
import json
import os
import string
import sys
import threading
import time

TOLERANCE_MS = 5 * 60 * 1000
MAX_BODY = 1 << 20
MAX_HEADER = 4096
TIMEOUT = 10  # seconds each read or write on a connection may wait
HEX_DIGITS = frozenset(string.hexdigits)
PREFIX = "whsec_"


class Rejected(Exception):
    """A delivery that fails verification; str() is the verdict."""


def _digits(text, what):
    if not text or len(text) > 18 or not text.isascii() or not text.isdigit():
        raise Rejected("malformed")
    return int(text)


def _check_age(signed_ms, now_ms):
    if abs(now_ms - signed_ms) > TOLERANCE_MS:
        raise Rejected("too_old")


def _check_secrets(secrets):
    if not secrets or not all(secrets):
        raise ValueError("empty secret")


def verify_service_signature(secrets, header, body, now_ms):
    """Checks X-Service-Signature against a list of secrets (any one may
    have signed); raises Rejected with the verdict."""
    _check_secrets(secrets)
    if header is None or not header.strip():
        raise Rejected("missing")
    if len(header) > MAX_HEADER:
        raise Rejected("malformed")
    t, v1 = None, []
    for part in header.split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise Rejected("malformed")
        if key == "t":
            if t is not None:
                raise Rejected("malformed")
            t = value
            _digits(value, "t")
        elif key == "v1":
            # Exactly 64 hex digits: bytes.fromhex alone would also take
            # blanks between them, which the Go verifier refuses.
            if len(value) != 64 or not HEX_DIGITS.issuperset(value):
                raise Rejected("malformed")
            v1.append(bytes.fromhex(value))
    if t is None or not v1:
        raise Rejected("malformed")
    matched = False
    for secret in secrets:
        expected = hmac.new(secret.encode("utf-8"), t.encode("ascii") + b"." + body, hashlib.sha256).digest()
        for got in v1:  # compare every value, in constant time
            matched |= hmac.compare_digest(expected, got)
    if not matched:
        raise Rejected("mismatch")
    _check_age(int(t), now_ms)


def standard_key(secret):
    """The Standard Webhooks key: base64 decoding of the text after whsec_."""
    text = secret[len(PREFIX):] if secret.startswith(PREFIX) else secret
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        key = b""
    return key or secret.encode("utf-8")


def verify_standard_signature(secrets, headers, body, now_ms):
    """Checks the Standard Webhooks headers against a list of secrets (any
    one may have signed); raises Rejected with the verdict."""
    _check_secrets(secrets)
    msg_id = headers.get("webhook-id")
    ts = headers.get("webhook-timestamp")
    sigs = headers.get("webhook-signature")
    if not msg_id or not ts or not sigs:
        raise Rejected("missing")
    if len(sigs) > MAX_HEADER:
        raise Rejected("malformed")
    seconds = _digits(ts, "webhook-timestamp")
    signed = msg_id.encode("utf-8") + b"." + str(seconds).encode("ascii") + b"." + body
    expected = [hmac.new(standard_key(secret), signed, hashlib.sha256).digest() for secret in secrets]
    matched = False
    for candidate in sigs.split(" "):
        version, sep, value = candidate.partition(",")
        if not sep or version != "v1":
            continue
        try:
            got = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            continue
        for want in expected:
            matched |= hmac.compare_digest(want, got)
    if not matched:
        raise Rejected("mismatch")
    _check_age(seconds * 1000, now_ms)


def verdict(check):
    try:
        check()
    except Rejected as r:
        return str(r)
    return "valid"


def check_vectors(path):
    """Verifies every case of the vectors file; returns the disagreements."""
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    if vectors["tolerance_seconds"] * 1000 != TOLERANCE_MS:
        return ["tolerance_seconds differs from this receiver's"]
    wrong = []
    for case in vectors["cases"]:
        body = base64.b64decode(case["body_base64"])
        if body != case["body"].encode("utf-8"):
            wrong.append("%s: body_base64 is not the body" % case["name"])
        headers = {k.lower(): v for k, v in case["headers"].items()}
        secrets, now = case.get("secrets") or [case["secret"]], case["now_ms"]
        got = {
            "X-Service-Signature": verdict(lambda: verify_service_signature(secrets, headers.get("x-service-signature"), body, now)),
            "webhook-signature": verdict(lambda: verify_standard_signature(secrets, headers, body, now)),
        }
        for scheme, want in case["expect"].items():
            if got[scheme] != want:
                wrong.append("%s: %s is %s, want %s" % (case["name"], scheme, got[scheme], want))
    print("%d cases checked" % len(vectors["cases"]))
    return wrong


def body_length(values):
    """Reads the Content-Length headers of a request: (length, None), or
    (status, reason) to answer instead: 400 when missing, repeated with
    different values, or not plain decimal digits (int() alone would take
    "-1", "+5" and "1_0"), 413 above MAX_BODY."""
    if not values or len(set(v.strip() for v in values)) != 1:
        return 400, "Content-Length missing or repeated"
    text = values[0].strip()
    if not text or not text.isascii() or not text.isdigit():
        return 400, "Content-Length is not a length"
    if len(text) > 18 or int(text) > MAX_BODY:
        return 413, "body too large"
    return int(text), None


class Handler(http.server.BaseHTTPRequestHandler):
    """Verifies, deduplicates and acknowledges one delivery per request."""

    # socketserver applies it to the connection: a read or write that
    # waits longer ends the connection (the request line, headers and body
    # included), so a silent client cannot hold a thread.
    timeout = TIMEOUT
    secrets = []
    seen = collections.OrderedDict()
    # Concurrent deliveries of one event must see each other's ids: the
    # check and the record are one step.
    seen_lock = threading.Lock()

    def do_POST(self):
        length, problem = body_length(self.headers.get_all("Content-Length"))
        if problem:
            self.close_connection = True  # the body, if any, is left unread
            self._answer(length, problem)
            return
        body = self.rfile.read(length)
        if len(body) != length:  # the client closed the connection early
            self.close_connection = True
            self._answer(400, "body shorter than Content-Length")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        now = int(time.time() * 1000)
        try:
            if "webhook-signature" in headers:
                verify_standard_signature(self.secrets, headers, body, now)
            else:
                verify_service_signature(self.secrets, headers.get("x-service-signature"), body, now)
        except Rejected as r:
            # Furrow does not retry a 4xx: a bad signature stays refused.
            self._answer(401 if str(r) in ("mismatch", "too_old") else 400, str(r))
            return
        try:
            event = json.loads(body)
            event_id, event_type = event["id"], event["type"]
            if not isinstance(event_id, str):
                raise TypeError("id")
        except (ValueError, TypeError, KeyError):
            self._answer(400, "not an event")
            return
        with self.seen_lock:
            duplicate = event_id in self.seen
            self.seen[event_id] = True
            while len(self.seen) > 100_000:
                self.seen.popitem(last=False)
        self._answer(204, "")
        if not duplicate:  # a real receiver queues the slow work here
            print("event %s of type %s" % (event_id, event_type), flush=True)

    def _answer(self, status, text):
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--check-vectors", metavar="FILE", help="verify the signature test vectors and exit")
    args = parser.parse_args()
    if args.check_vectors:
        wrong = check_vectors(args.check_vectors)
        for w in wrong:
            print(w, file=sys.stderr)
        if wrong:
            sys.exit(1)
        print("all cases agree")
        return
    Handler.secrets = [s.strip() for s in os.environ.get("WEBHOOK_SECRET", "").split(",") if s.strip()]
    if not Handler.secrets:
        sys.exit("set WEBHOOK_SECRET to the webhook's signing secret (several separated by commas while rotating)")
    server = http.server.ThreadingHTTPServer(("", args.port), Handler)
    print("listening on :%d" % args.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
