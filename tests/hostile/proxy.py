"""A hostile engine for tests/hostile.rs: the built-in engine (`referee engine serve`)
behind a proxy that cheats on the timed load, each class of cheat the runner must
catch (content/correctness.md, Cheats of record).

    proxy.py REFEREE CONFIG LISTEN_FD PROMPTS

The class is read from the entry's engine config, `startup_delay_ms` (a diff can set
it; the delay itself is harmless): 0 serves the engine as it is, with no proxy;
101 (`oov`) streams token ids outside the vocabulary (+1000) on every streamed request;
102 (`garbage_later`) streams valid but wrong ids (the right ones moved by 1) on every
streamed request whose prompt is not one of the first pass's: PROMPTS holds a line
`<sha256 hex> <tag>` for every prompt of the round, tagged `p<pass>` for a prompt of
that pass's sub-streams and `gate` for a correctness item, which the test computed from
the round's given seeds — the engine decides by pass from the request contents alone (no
state outlives a run in the sandbox): honest in pass 1, garbage after; 103 (`cpu_grab`) widens its CPU affinity to every CPU of the host — the
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
of sequence would; 106 (`gate_only`) knows the correctness gate's prompts by their text
and the first requests of a run by their position, and is honest on exactly those (every
gate prompt, streamed or not, and the first three streamed requests of its process),
streaming garbage (ids moved by 1) on every other one; 108 (`cache_prefix`) caches each
streamed answer under its prompt's first letter (after a JSONL item's `[tag] `) and
output length, and replays a cached answer at once for a later prompt with the same key
(an answer cache that serves near-duplicate prompts); 109 (`cache_exact`) caches each
streamed answer under its exact prompt and output length and replays it at once for a
repeat, writing `cache: stored` and `cache: replayed` lines to its log (MLPerf TEST04's
engine), which the caching probe of every counted run catches; 113 (`cache_untagged`)
caches as `cache_exact` does but under the prompt with a JSONL item's `[tag] ` stripped,
so a JSONL source's repeated line is replayed behind every other tag it comes with (a
cache the per-item tags were meant to defeat), with the same log lines; 100 (`honest`) is the
proxy itself with no cheat, the control of the cache classes (its overhead, honest
answers); 114 (`decoy`) is the same, named for the decoy round, whose pads make it the
fastest but in one pass. Requests that are not streamed (the correctness gate's) are
answered honestly.

PROMPTS may also hold lines `pad <class code> <tag> <ms>` (tag `*`: every pass): that
class holds its answer to each streamed request of that pass until `ms` after the request
arrived, then streams it whole — a latency fixed by the test, whatever the machine's
load, so that entries' throughputs differ by as much as the test says. A class code
with a pad runs behind the proxy even where it has no cheat (0, the baseline's).
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

REFEREE, CONFIG, LISTEN_FD, PROMPTS = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
VOCAB = 258


def class_code():
    """The entry's class code: its config's `startup_delay_ms` (0 without one)."""
    found = re.search(r"^startup_delay_ms\s*=\s*(\d+)", open(CONFIG).read(), re.M)
    return int(found.group(1)) if found else 0


def hostile_class():
    classes = {100: "honest", 101: "oov", 102: "garbage_later", 103: "cpu_grab", 104: "text_not_ids",
               105: "early_eos", 106: "gate_only", 108: "cache_prefix", 109: "cache_exact",
               110: "garbage_share", 111: "degraded", 112: "filler", 113: "cache_untagged",
               114: "decoy"}
    return classes.get(CODE)


def read_prompts():
    """PROMPTS' tags (prompt sha256 hex → tag) and pads ((class code, tag) → ms)."""
    tags, pads = {}, {}
    for line in open(PROMPTS):
        fields = line.split()
        if len(fields) == 4 and fields[0] == "pad":
            pads[(int(fields[1]), fields[2])] = int(fields[3])
        elif len(fields) == 2:
            tags[fields[0]] = fields[1]
    return tags, pads


CODE = class_code()
CLASS = hostile_class()
TAGS, PADS = read_prompts()
if any(code == CODE for code, _ in PADS):
    # A padded entry runs behind the proxy, honest but for its pads.
    CLASS = CLASS or "honest"
if CLASS is None:
    os.execv(REFEREE, [REFEREE, "engine", "serve", "--config", CONFIG,
                       "--listen-fd", str(LISTEN_FD), "--threads", "1"])


def prompt_tag(body):
    """The tag PROMPTS gives a request body's prompt (`p0`, `p1`, …, `gate`), or None."""
    try:
        prompt = json.loads(body or b"{}").get("prompt")
    except ValueError:
        return None
    if not isinstance(prompt, str):
        return None
    return TAGS.get(hashlib.sha256(prompt.encode()).hexdigest())


def cache_key(body):
    """The key the cache classes file a streamed answer under: (prompt, output length)
    for `cache_exact`; for `cache_untagged`, the prompt without a JSONL item's `[tag] `;
    for `cache_prefix`, the prompt's first letter after that tag in place of the prompt
    (a prefix most of a run's prompts share with an earlier one, so the cache serves
    many)."""
    request = json.loads(body or b"{}")
    prompt = request.get("prompt")
    if not isinstance(prompt, str):
        return None
    if CLASS in ("cache_prefix", "cache_untagged"):
        prompt = re.sub(r"^\[[0-9a-f]+\] ", "", prompt)
    if CLASS == "cache_prefix":
        prompt = prompt[:1]
    return prompt, request.get("max_tokens")


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
FIRST_STREAMED = {}


def first_streamed(body):
    """Whether a request body is one of the first three streamed requests this process
    was sent (the `gate_only` class's position tell)."""
    key = hashlib.sha256(body or b"").digest()
    if key not in FIRST_STREAMED:
        FIRST_STREAMED[key] = len(FIRST_STREAMED) < 3
    return FIRST_STREAMED[key]


def cut_short():
    """Whether the early_eos class ends this streamed request early: every eighth, from
    the fourth (past the warm-up)."""
    return next(STREAMED) % 8 == 3


def padding(body):
    """The ms PROMPTS pads this entry's answer to a streamed timed request to (`pad <class
    code> <tag> <ms>`, tag `*` for every pass), or None."""
    if not PADS or not streamed_request(body):
        return None
    tag = prompt_tag(body)
    if tag is None or not tag.startswith("p"):
        return None
    return PADS.get((CODE, tag), PADS.get((CODE, "*")))


# The answer cache classes.
CACHES = ("cache_prefix", "cache_exact", "cache_untagged")
# The cache classes that log what they store and replay.
LOGGED_CACHES = ("cache_exact", "cache_untagged")

if CLASS in ("honest", "decoy"):
    cheat = None
elif CLASS == "cpu_grab":
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
elif CLASS in CACHES:
    cheat = None
    CACHE = {}
else:
    if CLASS == "gate_only":
        def cheat(ids, body, seen):
            honest = prompt_tag(body) == "gate" or first_streamed(body)
            return (ids, None) if honest else ([(i + 1) % 256 for i in ids], None)
    else:
        def cheat(ids, body, seen):
            honest = prompt_tag(body) == "p0"
            return (ids, None) if honest else ([(i + 1) % 256 for i in ids], None)

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


# Seconds the answer cache waits after each streamed event it did not replay.
PACE_S = 0.003


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        start = time.monotonic()
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else None
        pad = padding(body)
        key = None
        if CLASS in CACHES and streamed_request(body):
            key = cache_key(body)
            replay = CACHE.get(key)
            if replay is not None:
                self.replay(replay)
                return
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
        held = []
        short = CLASS == "early_eos" and cut_short()
        keep = json.loads(body or b"{}").get("max_tokens", 2) // 2 if short else None
        streamed = 0
        kept = []
        while True:
            line = answer.readline()
            if not line:
                break
            kept.append(line)
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
            if pad is not None:
                held.append(line)
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()
            if CLASS == "cache_exact" and line.startswith(b"data: {"):
                # Decoding at a GPU engine's pace (a few ms per output token): the
                # built-in engine's tiny model streams a whole answer in about the time
                # the client takes to read one, and so would a replay (content/correctness.md,
                # Caching: what the probe can tell apart).
                time.sleep(PACE_S)
        if pad is not None:
            time.sleep(max(0.0, start + pad / 1000 - time.monotonic()))
            for line in held:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if key is not None and answer.status == 200:
            CACHE[key] = kept
            if CLASS in LOGGED_CACHES:
                print("cache: stored", flush=True, file=sys.stderr)

    def replay(self, lines):
        """Streams a cached answer's lines without asking the engine."""
        if CLASS in LOGGED_CACHES:
            print("cache: replayed", flush=True, file=sys.stderr)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for line in lines:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
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
