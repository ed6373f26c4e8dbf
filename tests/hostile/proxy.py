"""A hostile engine for tests/hostile.rs: the built-in engine (`referee engine serve`)
behind a proxy that cheats on the timed load, each class of cheat the runner must
catch (content/correctness.md, Cheats of record).

    proxy.py REFEREE CONFIG LISTEN_FD COUNTER_SOCKET

The class is read from the entry's engine config, `startup_delay_ms` (a diff can set
it; the delay itself is harmless): 0 serves the engine as it is, with no proxy;
101 (`oov`) streams token ids outside the vocabulary (+1000) on every streamed request;
102 (`garbage_later`) streams valid but wrong ids (the right ones moved by 1) on every
streamed request of every process but the first, which it learns by reading a number
from the Unix socket COUNTER_SOCKET (the test counts the processes): honest in pass 1,
garbage after; 103 (`cpu_grab`) widens its CPU affinity to every CPU of the host — the
load generator's included — before it starts the engine, which inherits it, and serves
honestly (content/measurement.md, The engine stays on its CPUs). Requests that are not
streamed (the correctness gate's) are answered honestly.
"""

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REFEREE, CONFIG, LISTEN_FD, COUNTER = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
VOCAB = 258


def hostile_class():
    text = open(CONFIG).read()
    found = re.search(r"^startup_delay_ms\s*=\s*(\d+)", text, re.M)
    classes = {101: "oov", 102: "garbage_later", 103: "cpu_grab"}
    return classes.get(int(found.group(1)) if found else 0)


CLASS = hostile_class()
if CLASS is None:
    os.execv(REFEREE, [REFEREE, "engine", "serve", "--config", CONFIG,
                       "--listen-fd", str(LISTEN_FD), "--threads", "1"])


def process_number():
    """This process's number among the entry's processes (0 for the first)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(COUNTER)
        return int(s.makefile().readline())


if CLASS == "cpu_grab":
    os.sched_setaffinity(0, range(os.cpu_count()))
    cheat = None
elif CLASS == "oov":
    def cheat(ids):
        return [i + 1000 for i in ids]
elif process_number() == 0:
    cheat = None
else:
    def cheat(ids):
        return [(i + 1) % 256 for i in ids]

inner = socket.socket()
inner.bind(("127.0.0.1", 0))
PORT = inner.getsockname()[1]
inner.close()
engine = subprocess.Popen([REFEREE, "engine", "serve", "--config", CONFIG,
                           "--port", str(PORT), "--threads", "1"])


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
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
        while True:
            line = answer.readline()
            if not line:
                break
            if cheat and line.startswith(b"data: {"):
                event = json.loads(line[6:])
                for choice in event.get("choices") or []:
                    if choice.get("token_ids"):
                        choice["token_ids"] = cheat(choice["token_ids"])
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
