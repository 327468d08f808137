"""A scripted OpenAI-compatible chat-completions server on a loopback port (tests only).

It speaks ``POST /v1/chat/completions`` (non-streaming) and replays a script of steps, one
per request: ``{"content": str, "usage": {"prompt_tokens", "completion_tokens"} | None}``
answers 200 (``usage: None`` leaves the usage fields out), ``{"status": 500}`` answers that
HTTP error, ``{"sleep": s, ...}`` waits ``s`` seconds first. Past the end of the script it
answers HTTP 500 ("script exhausted"), so a test never hangs on an unexpected call. Every
request body is kept in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    """The server; ``url`` is the base URL to give ChatOpenAI (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self) -> None:
        self.script: list[dict] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                with fake.lock:
                    fake.requests.append(body)
                    step = fake.script.pop(0) if fake.script else {"status": 500, "message": "script exhausted"}
                if step.get("sleep"):
                    time.sleep(step["sleep"])
                if step.get("status", 200) != 200:
                    return self._send(step["status"], {"error": {"message": step.get("message", "scripted error"),
                                                                 "type": "server_error"}})
                resp = {"id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": step["content"]}}]}
                if step.get("usage") is not None:
                    u = step["usage"]
                    resp["usage"] = {"prompt_tokens": u["prompt_tokens"], "completion_tokens": u["completion_tokens"],
                                     "total_tokens": u["prompt_tokens"] + u["completion_tokens"]}
                self._send(200, resp)

            def _send(self, code: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> "FakeOpenAI":
        """Serve in a background thread."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
