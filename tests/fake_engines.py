"""Small real HTTP engines for the backend tests: they speak vLLM's ``/v1/completions`` (token ids
in, token ids or text out) and SGLang's ``/generate``, record what they were sent, stream a
scripted output (as several samples when asked for ``n``, with log probabilities when asked
for them, in each API's shape), and misbehave on request (stall, die, send garbage, never
finish)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

import deepseek_recipe as dr

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

Behaviour = Literal["normal", "status", "stall", "die", "garbage", "endless", "no_finish"]


@dataclass
class FakeEngine:
    """An engine that streams ``script`` (chunks of output ids) as the ``kind`` API does.

    ``token_ids=False`` makes the completions flavour stream text only (an engine without
    ``return_token_ids``). ``cached_tokens`` is reported in the final usage (completions) or in
    every ``meta_info`` (SGLang). Every request's JSON body is kept in ``requests``;
    ``disconnects`` counts requests whose client went away before the stream ended.
    """

    tokenizer: dr.Tokenizer
    kind: Literal["completions", "sglang"] = "completions"
    script: list[list[int]] = field(default_factory=list)
    finish: str = "stop"
    behaviour: Behaviour = "normal"
    token_ids: bool = True
    cached_tokens: int = 0
    interval: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    disconnects: int = 0
    active: int = 0
    finished: int = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        self.requests.append(request)
        self.active += 1
        try:
            await self._serve(request, receive, send)
        finally:
            self.active -= 1

    async def _serve(self, request: dict[str, Any], receive: Receive, send: Send) -> None:
        if self.behaviour == "status":
            body = b'{"error": {"message": "boom"}}'
            await send(
                {"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        gone = anyio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            try:
                await self._stream(request, send, gone)
                self.finished += 1
            except OSError:
                pass
            if gone.is_set():
                self.disconnects += 1
            group.cancel_scope.cancel()

    async def _stream(self, request: dict[str, Any], send: Send, gone: anyio.Event) -> None:
        async def event(data: Any) -> None:
            if gone.is_set():
                raise OSError("client gone")
            text = data if isinstance(data, str) else json.dumps(data)
            await send({"type": "http.response.body", "body": f"data: {text}\n\n".encode(), "more_body": True})

        prompt = request.get("prompt") or request.get("input_ids") or []
        if self.behaviour == "stall":
            await gone.wait()
            return
        if self.behaviour == "garbage":
            await event("this is not json")
            await gone.wait()
            return
        chunks = list(self.script)
        samples = int(request.get("n") or (request.get("sampling_params") or {}).get("n") or 1)
        sent_by: list[list[int]] = [[] for _ in range(samples)]
        sent = sent_by[0]
        index = 0
        while self.behaviour == "endless" or index < len(chunks):
            ids = chunks[index % len(chunks)] if chunks else [100]
            index += 1
            if self.interval:
                await anyio.sleep(self.interval)
            if gone.is_set():
                return
            last = index == len(chunks) and self.behaviour not in ("endless", "no_finish")
            if self.behaviour == "die" and index == 2:
                raise RuntimeError("the engine died")  # uvicorn drops the connection
            for sample, sample_sent in enumerate(sent_by):  # several samples interleave
                sample_sent += ids
                chunk = self._chunk(request, prompt, ids, sample_sent, last)
                if samples > 1:
                    if self.kind == "sglang":
                        chunk["index"] = sample
                    else:
                        chunk["choices"][0]["index"] = sample
                await event(chunk)
        sent = [i for sample_sent in sent_by for i in sample_sent]
        if self.behaviour == "no_finish":
            await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})
            return
        if self.kind == "completions":
            usage = {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(sent),
                "total_tokens": len(prompt) + len(sent),
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
            }
            await event({"id": "cmpl-1", "object": "text_completion", "choices": [], "usage": usage})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    def _decode(self, ids: list[int]) -> str:
        """The text of ``ids`` (an id outside the vocabulary decodes to nothing)."""
        return self.tokenizer.decode([i for i in ids if self.tokenizer.token_bytes(i) is not None])

    def _chunk(self, request: dict[str, Any], prompt: list[int], ids: list[int], sent: list[int], last: bool) -> Any:
        # Text as engines stream it: a character split across tokens waits until it is whole.
        whole = self._decode(sent)
        ready = whole if last else whole.rstrip("\ufffd")
        done = self._decode(sent[: len(sent) - len(ids)]).rstrip("\ufffd")
        text = ready[len(done) :] if len(ready) >= len(done) else ""
        if self.kind == "sglang":
            meta = {
                "id": request.get("rid"),
                "prompt_tokens": len(prompt),
                "completion_tokens": len(sent),
                "cached_tokens": self.cached_tokens,
                "finish_reason": {"type": self.finish, "matched": 1} if last else None,
            }
            if request.get("return_logprob"):
                top = int(request.get("top_logprobs_num") or 0)
                meta["output_token_logprobs"] = [[_logprob(i), i, None] for i in sent]
                meta["output_top_logprobs"] = [[[_logprob(i + k), i + k, None] for k in range(top)] for i in sent]
            return {"text": self._decode(sent), "output_ids": list(sent), "meta_info": meta}
        logprobs = None
        if request.get("logprobs") is not None:
            top = int(request["logprobs"])
            logprobs = {
                "tokens": [f"token_id:{i}" for i in ids],
                "token_logprobs": [_logprob(i) for i in ids],
                "top_logprobs": [{f"token_id:{i + k}": _logprob(i + k) for k in range(top)} for i in ids],
            }
        choice: dict[str, Any] = {
            "index": 0,
            "text": text,
            "logprobs": logprobs,
            "finish_reason": self.finish if last else None,
        }
        if self.token_ids and request.get("return_token_ids"):
            choice["token_ids"] = ids
        return {
            "id": "cmpl-1",
            "object": "text_completion",
            "created": 0,
            "model": request["model"],
            "choices": [choice],
        }


def _logprob(token: int) -> float:
    """A made-up log probability of ``token`` (the same every time)."""
    return -((token % 7) + 1) / 8
