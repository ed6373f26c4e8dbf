#!/usr/bin/env python3
"""Serves llama-cpp-python's OpenAI-compatible server on the socket referee hands over.

    python serve.py CONFIG.json MODEL.gguf

referee's `process` backend binds the listening socket itself and passes it as fd 3
(`LISTEN_FDS=1`, systemd socket activation); `python -m llama_cpp.server` binds its own
`--host`/`--port`, so this wrapper starts the same app with uvicorn on fd 3. CONFIG is
llama-cpp-python's own config file (`ConfigFileSettings`, JSON): the server's settings and
its `models`; the model path is given here (it lives outside the tree) and every model
entry without one gets it. `n_threads` is taken from `REFEREE_THREADS` when the entry
sets none.
"""

import json
import os
import sys

import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.settings import ConfigFileSettings, ServerSettings


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: serve.py CONFIG.json MODEL.gguf")
    config_path, model_path = sys.argv[1], sys.argv[2]
    with open(config_path, "rb") as f:
        raw = json.load(f)
    for model in raw.get("models", []):
        model.setdefault("model", model_path)
        if "REFEREE_THREADS" in os.environ:
            model.setdefault("n_threads", int(os.environ["REFEREE_THREADS"]))
    config = ConfigFileSettings.model_validate(raw)
    app = create_app(
        server_settings=ServerSettings.model_validate(config),
        model_settings=config.models,
    )
    uvicorn.run(app, fd=int(os.environ.get("REFEREE_LISTEN_FD", "3")), log_level="warning")


if __name__ == "__main__":
    main()
