"""Record and replay the LLM traffic of a run, as an httpx transport under ``ChatOpenAI``.

``RecordingTransport`` forwards each request to the real endpoint and writes one JSON file
per exchange into a folder; ``ReplayTransport`` answers from such a folder without any
server, so a run against a real model (or answers of a stronger model recorded elsewhere)
can be reproduced exactly in a test or a benchmark.

One exchange file (``<time_ns>-<pid>-<key12>.json``, sorted by name = recording order)::

    {"key": sha256 of the canonical request, "method": "POST", "path": "/v1/chat/completions",
     "request": {...request JSON...}, "status": 200, "response": {...response JSON...},
     "seconds": 1.23}

or, when the transport failed (connection refused, reset mid-answer, timeout),
``"error": "connect" | "read" | "timeout"`` and ``"message"`` instead of status and response.

Replay matches a request by its key (model, messages and sampling fields, canonical JSON);
identical requests are answered in recording order. A request with no recorded match gets
the next unused exchange in recording order (the prompt changed, e.g. a timing figure in a
diagnosis), counted in ``ReplayTransport.mismatches``; once every exchange is used it
answers HTTP 404 with a message naming the folder, which ends the run like any HTTP error.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time

import httpx

#: Request fields that decide the answer; the rest (stream options, user ids) are left out of the key.
KEY_FIELDS = ("model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed",
              "n", "response_format", "tools")


class ReplayError(Exception):
    """The replay folder is missing or holds no readable exchange (message names it)."""


def request_key(body: dict) -> str:
    """SHA-256 hex of the answer-deciding fields of a chat-completions request body (canonical JSON)."""
    sub = {k: body.get(k) for k in KEY_FIELDS if body.get(k) is not None}
    return hashlib.sha256(json.dumps(sub, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _json_or_text(raw: bytes):
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return raw.decode("utf-8", "replace")


class RecordingTransport(httpx.BaseTransport):
    """Forward to ``inner`` (default ``httpx.HTTPTransport``) and write every exchange into ``folder``."""

    def __init__(self, folder: str, inner: httpx.BaseTransport | None = None) -> None:
        os.makedirs(folder, exist_ok=True)
        self.folder = folder
        self.inner = inner or httpx.HTTPTransport()
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request through the wrapped transport and record the exchange (failures included)."""
        body = _json_or_text(request.read())
        rec = {"key": request_key(body) if isinstance(body, dict) else "", "method": request.method,
               "path": request.url.path, "request": body}
        t0 = time.monotonic()
        try:
            resp = self.inner.handle_request(request)
            raw = resp.read()
        except httpx.TransportError as e:
            kind = "timeout" if isinstance(e, httpx.TimeoutException) else \
                "connect" if isinstance(e, httpx.ConnectError) else "read"
            self._write({**rec, "error": kind, "message": str(e)[:500], "seconds": round(time.monotonic() - t0, 3)})
            raise
        self._write({**rec, "status": resp.status_code, "response": _json_or_text(raw),
                     "seconds": round(time.monotonic() - t0, 3)})
        return httpx.Response(resp.status_code, headers=resp.headers, content=raw, request=request)

    def _write(self, rec: dict) -> None:
        with self.lock:
            name = f"{time.time_ns()}-{os.getpid()}-{rec['key'][:12] or 'nokey'}.json"
            tmp = os.path.join(self.folder, "." + name)
            with open(tmp, "w") as f:
                json.dump(rec, f, indent=1, ensure_ascii=False)
            os.replace(tmp, os.path.join(self.folder, name))

    def close(self) -> None:
        """Close the wrapped transport."""
        self.inner.close()


def load_exchanges(folder: str) -> list[dict]:
    """The exchanges of a recording folder in recording order.

    Raises:
        ReplayError: the folder does not exist or holds no exchange file.
    """
    if not os.path.isdir(folder):
        raise ReplayError(f"--llm-replay {folder}: no such folder")
    out = []
    for name in sorted(n for n in os.listdir(folder) if n.endswith(".json") and not n.startswith(".")):
        try:
            with open(os.path.join(folder, name)) as f:
                rec = json.load(f)
        except (OSError, ValueError) as e:
            raise ReplayError(f"--llm-replay {folder}: {name} is not a readable exchange: {e}") from None
        out.append(rec)
    if not out:
        raise ReplayError(f"--llm-replay {folder}: the folder holds no recorded exchange")
    return out


class ReplayTransport(httpx.BaseTransport):
    """Answer chat-completions requests from a recording folder; no network.

    Attributes:
        mismatches: requests that had no exact recorded match and got the next unused exchange.
        served: exchanges answered so far.
    """

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.exchanges = load_exchanges(folder)
        self.used = [False] * len(self.exchanges)
        self.mismatches = 0
        self.served = 0
        self.lock = threading.Lock()

    def _pick(self, key: str) -> dict | None:
        with self.lock:
            i = next((i for i, r in enumerate(self.exchanges) if not self.used[i] and r.get("key") == key), None)
            if i is None:
                i = next((i for i, u in enumerate(self.used) if not u), None)
                if i is None:
                    return None
                self.mismatches += 1
            self.used[i] = True
            self.served += 1
            return self.exchanges[i]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer one request from the recording (identical requests in recording order)."""
        body = _json_or_text(request.read())
        rec = self._pick(request_key(body) if isinstance(body, dict) else "")
        if rec is None:
            msg = f"replay {self.folder}: every recorded exchange is used; no answer for this request"
            return httpx.Response(404, json={"error": {"message": msg, "type": "replay_exhausted"}}, request=request)
        err = rec.get("error")
        if err == "timeout":
            raise httpx.ReadTimeout(rec.get("message", "recorded timeout"), request=request)
        if err == "connect":
            raise httpx.ConnectError(rec.get("message", "recorded connection failure"), request=request)
        if err:
            raise httpx.RemoteProtocolError(rec.get("message", "recorded broken answer"), request=request)
        resp = rec.get("response")
        content = json.dumps(resp).encode() if not isinstance(resp, str) else resp.encode()
        return httpx.Response(int(rec.get("status", 200)), headers={"content-type": "application/json"},
                              content=content, request=request)


_REPLAYS: dict[str, ReplayTransport] = {}


def http_client(record: str | None = None, replay: str | None = None, timeout_s: float = 120.0) -> httpx.Client | None:
    """An ``httpx.Client`` that records into ``record`` or replays from ``replay``; None when neither is set.

    Raises:
        ReplayError: ``replay`` is not a folder of recorded exchanges.
        ValueError: both are set.
    """
    if record and replay:
        raise ValueError("--llm-record and --llm-replay exclude each other")
    if replay:
        key = os.path.abspath(replay)
        if key not in _REPLAYS:  # one per process: the patcher builds a client each turn, exchanges are used once
            _REPLAYS[key] = ReplayTransport(replay)
        return httpx.Client(transport=_REPLAYS[key], timeout=timeout_s)
    if record:
        return httpx.Client(transport=RecordingTransport(record), timeout=timeout_s)
    return None


def recorded_model(folder: str) -> str | None:
    """The model name of the first recorded request (for replay without ``NEARMISS_LLM_MODEL``)."""
    for rec in load_exchanges(folder):
        if isinstance(rec.get("request"), dict) and rec["request"].get("model"):
            return rec["request"]["model"]
    return None
