"""An OpenAI-compatible ``/v1/completions`` engine that takes the prompt as token ids.

vLLM, SGLang, llama.cpp and others accept ``"prompt": [id, …]``. The request asks for the
output as token ids where the engine offers them (vLLM's ``return_token_ids``: each streamed
choice then carries the ids it added), so the gateway decodes and parses the exact tokens;
an engine that ignores the flag streams text, which is parsed as text (each chunk counted as
the tokens its logprobs name, or one). Log probabilities are asked for as ids too
(``return_tokens_as_token_ids``). Constraints go as vLLM's ``structured_outputs`` (JSON
schema, JSON object, regex); tool-call constraints are not sent (no engine knows DSML).
Special tokens are kept in text output (``skip_special_tokens: false``), the tokenizer's end
of sentence is a stop token and is dropped from the output, and stop *sequences* are never
sent: they apply to parsed content, which the gateway matches.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import orjson

from deepseek_recipe.backends import BackendChunk, BackendError, GenerationRequest, json_body
from deepseek_recipe.backends._http import HttpBackend, nonnegative_int, without_stop_ids
from deepseek_recipe.frontend import FINISH_REASONS, FinishReason


class CompletionsBackend(HttpBackend):
    """``base_url`` is the server's root (``http://host:8000``) or its ``/v1``."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        token_ids: bool = True,
        connect_timeout: float = 10.0,
    ) -> None:
        root = base_url.rstrip("/")
        super().__init__(
            root + ("/completions" if root.endswith("/v1") else "/v1/completions"),
            connect_timeout=connect_timeout,
        )
        self.name = f"completions {root}"
        self.model = model
        self.token_ids = token_ids

    def body(self, request: GenerationRequest) -> bytes:
        """The engine's request body for ``request``."""
        sampling = request.sampling
        body: dict[str, Any] = {
            "model": self.model or request.model,
            "max_tokens": sampling.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        if sampling.n > 1:
            body["n"] = sampling.n
        if self.token_ids:
            body["return_token_ids"] = True
        if request.stop_token_ids:
            body["stop_token_ids"] = list(request.stop_token_ids)
        for name in ("temperature", "top_p", "seed"):
            if (value := getattr(sampling, name)) is not None:
                body[name] = value
        if sampling.logprobs:
            body["logprobs"] = sampling.top_logprobs or 0
            body["return_tokens_as_token_ids"] = True
        constraint = request.output_constraint
        if constraint is not None and constraint.kind == "json":
            schema = orjson.loads(constraint.schema) if constraint.schema else None
            body["structured_outputs"] = {"json": schema} if schema is not None else {"json_object": True}
        elif constraint is not None and constraint.kind == "regex":
            body["structured_outputs"] = {"regex": constraint.schema}
        return json_body(body, "prompt", request.prompt_ids)

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        stop_ids = set(request.stop_token_ids)
        top = request.sampling.top_logprobs or 0
        last = BackendChunk()
        finishes: dict[int, FinishReason] = {}  # by choice
        async for event in self._events(request):
            if event is None:
                yield BackendChunk()
                continue
            for choice in event.get("choices") or ():
                chunk = _choice_chunk(choice, stop_ids, top)
                if chunk.finish_reason is not None:
                    finishes[chunk.index] = chunk.finish_reason
                chunk.finish_reason = None
                if chunk.token_ids or chunk.text:
                    yield chunk
            usage = event.get("usage")
            if isinstance(usage, dict):
                details = usage.get("prompt_tokens_details")
                last.prompt_tokens = nonnegative_int(usage.get("prompt_tokens"))
                last.cached_tokens = (
                    nonnegative_int(details.get("cached_tokens")) if isinstance(details, dict) else None
                )
        # The finishes wait for the end of the stream (the usage comes after them), and reading
        # to the end keeps the connection for the next request.
        for index, reason in sorted(finishes.items()):
            last.finish_reason, last.index = reason, index
            yield last
            last = BackendChunk(prompt_tokens=last.prompt_tokens, cached_tokens=last.cached_tokens)


def _choice_chunk(choice: Any, stop_ids: set[int], top: int) -> BackendChunk:
    """One streamed choice as a chunk: its new ids (or text), logprobs and finish reason."""
    if not isinstance(choice, dict):
        raise BackendError("protocol", "the engine sent a choice that is not an object", accepted=True)
    index = nonnegative_int(choice.get("index")) or 0
    reason = choice.get("finish_reason")
    finish: FinishReason | None = None if reason is None else reason if reason in FINISH_REASONS else "stop"
    if reason == "abort":
        raise BackendError("closed", "the engine aborted the request", accepted=True)
    logprobs = _logprobs(choice.get("logprobs"), top)
    ids = choice.get("token_ids")
    if isinstance(ids, list):
        if not all(isinstance(i, int) and i >= 0 for i in ids):
            raise BackendError("protocol", "the engine sent token ids that are not ids", accepted=True)
        kept, logprobs = without_stop_ids(ids, logprobs, stop_ids)
        return BackendChunk(token_ids=kept, logprobs=logprobs, finish_reason=finish, index=index)
    text = choice.get("text")
    if text is not None and not isinstance(text, str):
        raise BackendError("protocol", "the engine sent text that is not a string", accepted=True)
    count = len(logprobs) if logprobs is not None else (1 if text else 0)
    return BackendChunk(text=text or None, token_count=count, finish_reason=finish, index=index)


def _logprobs(value: Any, top: int) -> list[tuple[float, list[tuple[int, float]]]] | None:
    """OpenAI completions logprobs with ``token_id:N`` tokens, as ``(logprob, [(id, logprob)])``."""
    if not isinstance(value, dict):
        return None
    sampled, tops = value.get("token_logprobs"), value.get("top_logprobs")
    if not isinstance(sampled, list) or not isinstance(tops, list) or len(sampled) != len(tops):
        return None
    out = []
    for logprob, alternatives in zip(sampled, tops):
        pairs = []
        for token, alternative in (alternatives or {}).items():
            token_id = _token_id(token)
            if token_id is not None and isinstance(alternative, (int, float)):
                pairs.append((token_id, float(alternative)))
        out.append((float(logprob) if isinstance(logprob, (int, float)) else 0.0, pairs[:top]))
    return out


def _token_id(token: Any) -> int | None:
    if isinstance(token, str) and token.startswith("token_id:") and token[9:].isdigit():
        return int(token[9:])
    return None
