"""A hostile engine for tests/hostile.rs: the built-in engine (`referee engine serve`)
behind a proxy that cheats on the timed load, each class of cheat the runner must
catch (content/correctness.md, Cheats of record).

    proxy.py REFEREE CONFIG LISTEN_FD FIRST_PASS_PROMPTS

The class is read from the entry's engine config, `startup_delay_ms` (a diff can set
it; the delay itself is harmless): 0 serves the engine as it is, with no proxy;
101 (`oov`) streams token ids outside the vocabulary (+1000) on every streamed request;
102 (`garbage_later`) streams valid but wrong ids (the right ones moved by 1) on every
streamed request whose prompt is not one of the first pass's: FIRST_PASS_PROMPTS holds
the sha256 (hex, one a line) of every prompt of pass 0's sub-streams, which the test
computed from the round's given seeds — the engine decides by pass from the request
contents alone (no state outlives a run in the sandbox): honest in pass 1, garbage
after; 103 (`cpu_grab`) widens its CPU affinity to every CPU of the host — the
load generator's included — before it starts the engine, which inherits it, and serves
honestly (content/measurement.md, The engine stays on its CPUs); 110 (`garbage_share`)
streams valid but wrong ids (printable, the text rewritten to match) on the ~10 % of
streamed requests whose prompt's sha256 starts with a byte below 26, honest elsewhere;
111 (`degraded`) serves streamed requests from a second engine with int4 weights (the
gate rejects them) and the rest at the config's precision; 112 (`filler`) replaces every
twelfth streamed token (8 %) with a space, text and ids alike; 104 (`text_not_ids`)
streams the right ids with a text of `z`s in place of theirs;
105 (`early_eos`) ends every eighth streamed request (from the fourth) at half their
length, reporting the length it streamed in `usage` as an engine that stopped at an end
of sequence would. Requests that are not streamed (the correctness gate's) are answered
honestly.
"""

import hashlib
import itertools
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REFEREE, CONFIG, LISTEN_FD, FIRST = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
VOCAB = 258


def hostile_class():
    text = open(CONFIG).read()
    found = re.search(r"^startup_delay_ms\s*=\s*(\d+)", text, re.M)
    classes = {101: "oov", 102: "garbage_later", 103: "cpu_grab", 104: "text_not_ids",
               105: "early_eos", 110: "garbage_share", 111: "degraded", 112: "filler"}
    return classes.get(int(found.group(1)) if found else 0)


CLASS = hostile_class()
if CLASS is None:
    os.execv(REFEREE, [REFEREE, "engine", "serve", "--config", CONFIG,
                       "--listen-fd", str(LISTEN_FD), "--threads", "1"])


def first_pass(body):
    """Whether a request body's prompt is one of the first pass's."""
    try:
        prompt = json.loads(body or b"{}").get("prompt")
    except ValueError:
        return False
    if not isinstance(prompt, str):
        return False
    return hashlib.sha256(prompt.encode()).hexdigest() in FIRST_PASS


def prompt_hash(body):
    """The sha256 of a request body's prompt (of nothing for a body without one)."""
    try:
        prompt = json.loads(body or b"{}").get("prompt")
    except ValueError:
        prompt = None
    return hashlib.sha256(prompt.encode() if isinstance(prompt, str) else b"").digest()


def streamed_request(body):
    """Whether a request body asks for a stream."""
    try:
        return json.loads(body or b"{}").get("stream") is True
    except ValueError:
        return False


def printable(ids):
    """Valid, wrong, printable ids and their text."""
    wrong = [33 + (i + 1) % 94 for i in ids]
    return wrong, bytes(wrong).decode()


STREAMED_PORT = None


STREAMED = itertools.count()


def cut_short():
    """Whether the early_eos class ends this streamed request early: every eighth, from
    the fourth (past the warm-up)."""
    return next(STREAMED) % 8 == 3


if CLASS == "cpu_grab":
    os.sched_setaffinity(0, range(os.cpu_count()))
    cheat = None
elif CLASS in ("text_not_ids", "early_eos"):
    def cheat(ids, body, seen):
        return ids, None
elif CLASS == "oov":
    def cheat(ids, body, seen):
        return [i + 1000 for i in ids], None
elif CLASS == "garbage_share":
    def cheat(ids, body, seen):
        return printable(ids) if prompt_hash(body)[0] < 26 else (ids, None)
elif CLASS == "filler":
    def cheat(ids, body, seen):
        if any((seen + k) % 12 == 11 for k in range(len(ids))):
            filled = [32 if (seen + k) % 12 == 11 else i for k, i in enumerate(ids)]
            return filled, bytes(i for i in filled if i < 256).decode(errors="replace")
        return ids, None
elif CLASS == "degraded":
    cheat = None
    DEGRADED = "/tmp/degraded.toml"
    with open(DEGRADED, "w") as f:
        f.write(re.sub(r'^weight_dtype\s*=.*$', 'weight_dtype = "int4"', open(CONFIG).read(),
                       flags=re.M))
else:
    FIRST_PASS = set(open(FIRST).read().split())

    def cheat(ids, body, seen):
        return (ids, None) if first_pass(body) else ([(i + 1) % 256 for i in ids], None)

inner = socket.socket()
inner.bind(("127.0.0.1", 0))
PORT = inner.getsockname()[1]
inner.close()
engine = subprocess.Popen([REFEREE, "engine", "serve", "--config", CONFIG,
                           "--port", str(PORT), "--threads", "1"])
if CLASS == "degraded":
    spare = socket.socket()
    spare.bind(("127.0.0.1", 0))
    STREAMED_PORT = spare.getsockname()[1]
    spare.close()
    degraded = subprocess.Popen([REFEREE, "engine", "serve", "--config", DEGRADED,
                                 "--port", str(STREAMED_PORT), "--threads", "1"])


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        streaming = STREAMED_PORT is not None and streamed_request(body)
        upstream = http.client.HTTPConnection(
            "127.0.0.1", STREAMED_PORT if streaming else PORT, timeout=120)
        try:
            upstream.request(self.command, self.path, body=body,
                             headers={"content-type": "application/json"})
            answer = upstream.getresponse()
        except OSError:
            self.send_response(503)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        streamed = "text/event-stream" in (answer.getheader("content-type") or "")
        self.send_response(answer.status)
        self.send_header("content-type", answer.getheader("content-type") or "text/plain")
        if not streamed:
            data = answer.read()
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        seen = 0
        short = CLASS == "early_eos" and cut_short()
        keep = json.loads(body or b"{}").get("max_tokens", 2) // 2 if short else None
        streamed = 0
        while True:
            line = answer.readline()
            if not line:
                break
            if cheat and line.startswith(b"data: {"):
                event = json.loads(line[6:])
                for choice in event.get("choices") or []:
                    if choice.get("token_ids"):
                        ids, text = cheat(choice["token_ids"], body, seen)
                        seen += len(ids)
                        choice["token_ids"] = ids
                        if text is not None:
                            choice["text"] = text
                    if CLASS == "text_not_ids" and choice.get("text"):
                        choice["text"] = "z" * len(choice["text"])
                if short:
                    choices = event.get("choices") or []
                    if any(c.get("token_ids") for c in choices):
                        if streamed >= keep:
                            continue
                        streamed += sum(len(c["token_ids"]) for c in choices)
                    if event.get("usage"):
                        event["usage"]["completion_tokens"] = streamed
                line = b"data: " + json.dumps(event).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = forward
    do_POST = forward


class Server(ThreadingHTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Proxy, bind_and_activate=False)
server.socket.close()
server.socket = socket.socket(fileno=LISTEN_FD)
try:
    server.serve_forever()
finally:
    engine.terminate()
