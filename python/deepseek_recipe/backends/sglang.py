"""SGLang's native ``/generate`` with ``input_ids``.

SGLang streams ``{"text", "output_ids", "meta_info"}`` objects; ``output_ids`` holds every id so
far, or only the new ones when the server runs with ``--incremental-streaming-output``. Both
are read the same way: ``meta_info.completion_tokens`` says how many ids exist so far, so the
new ones are always the last ``completion_tokens - seen``. ``meta_info`` also reports
``prompt_tokens`` and ``cached_tokens`` (the prefix-cache hit), which the gateway passes on.
Constraints go as ``json_schema`` / ``regex`` sampling parameters.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from deepseek_recipe.backends import BackendChunk, BackendError, GenerationRequest, image_data_url, json_body
from deepseek_recipe.backends._http import HttpBackend, nonnegative_int, without_stop_ids
from deepseek_recipe.frontend import FinishReason


class SGLangBackend(HttpBackend):
    """``base_url`` is the SGLang server's root (``http://host:30000``)."""

    takes_images = True

    def __init__(self, base_url: str, *, connect_timeout: float = 10.0) -> None:
        root = base_url.rstrip("/")
        super().__init__(root + "/generate", connect_timeout=connect_timeout)
        self.name = f"sglang {root}"

    def body(self, request: GenerationRequest) -> bytes:
        """The engine's request body for ``request``."""
        sampling = request.sampling
        params: dict[str, Any] = {
            "max_new_tokens": sampling.max_tokens,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        if request.stop_token_ids:
            params["stop_token_ids"] = list(request.stop_token_ids)
        if sampling.temperature is not None:
            params["temperature"] = sampling.temperature
        if sampling.top_p is not None:
            params["top_p"] = sampling.top_p
        if sampling.seed is not None:
            params["sampling_seed"] = sampling.seed
        if sampling.n > 1:
            params["n"] = sampling.n  # the stream then names each sample by its `index`
        constraint = request.output_constraint
        if constraint is not None and constraint.kind == "json":
            params["json_schema"] = constraint.schema or '{"type": "object"}'
        elif constraint is not None and constraint.kind == "regex":
            params["regex"] = constraint.schema
        body: dict[str, Any] = {
            "sampling_params": params,
            "stream": True,
            "rid": request.request_id,
        }
        if request.images:
            # One data URL per image placeholder, in order; SGLang expands each placeholder.
            body["image_data"] = [image_data_url(image.data) for image in request.images]
        if sampling.logprobs:
            body["return_logprob"] = True
            body["top_logprobs_num"] = sampling.top_logprobs or 0
        return json_body(body, "input_ids", request.prompt_ids)

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        stop_ids = set(request.stop_token_ids)
        samples = max(request.sampling.n, 1)
        seen_by: dict[int, int] = {}  # ids seen so far, by sample
        finished: set[int] = set()
        async for event in self._events(request):
            if event is None:
                yield BackendChunk()
                continue
            index = nonnegative_int(event.get("index")) or 0
            seen = seen_by.get(index, 0)
            meta = event.get("meta_info")
            ids = event.get("output_ids")
            if not isinstance(meta, dict) or not isinstance(ids, list):
                raise BackendError("protocol", "the engine sent an event without output_ids/meta_info", accepted=True)
            total = meta.get("completion_tokens")
            total = total if isinstance(total, int) and total >= seen else seen + len(ids)
            new = ids[len(ids) - (total - seen) :] if total > seen else []
            if not all(isinstance(i, int) and i >= 0 for i in new):
                raise BackendError("protocol", "the engine sent token ids that are not ids", accepted=True)
            logprobs = _logprobs(meta, total - seen, request.sampling.top_logprobs or 0) if new else None
            seen_by[index] = total
            new, logprobs = without_stop_ids(new, logprobs, stop_ids)
            chunk = BackendChunk(
                token_ids=new or None,
                logprobs=logprobs if new else None,
                prompt_tokens=nonnegative_int(meta.get("prompt_tokens")),
                cached_tokens=nonnegative_int(meta.get("cached_tokens")),
                finish_reason=_finish(meta.get("finish_reason")),
                index=index,
            )
            yield chunk
            if chunk.finish_reason is not None:
                finished.add(index)
                if len(finished) >= samples:
                    return


def _finish(value: Any) -> FinishReason | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else value
    if kind == "length":
        return "length"
    if kind == "abort":
        raise BackendError("closed", "the engine aborted the request", accepted=True)
    return "stop"


def _logprobs(meta: dict[str, Any], new: int, top: int) -> list[tuple[float, list[tuple[int, float]]]] | None:
    """The last ``new`` entries of SGLang's ``[logprob, id, text]`` lists, with their top lists."""
    sampled, tops = meta.get("output_token_logprobs"), meta.get("output_top_logprobs")
    if not isinstance(sampled, list) or len(sampled) < new:
        return None
    tops = tops if isinstance(tops, list) and len(tops) >= new else [[]] * new
    out = []
    for entry, alternatives in zip(sampled[len(sampled) - new :], tops[len(tops) - new :]):
        pairs = [
            (int(a[1]), float(a[0]))
            for a in (alternatives or [])
            if isinstance(a, list) and len(a) >= 2 and isinstance(a[1], int) and isinstance(a[0], (int, float))
        ]
        logprob = entry[0] if isinstance(entry, list) and entry and isinstance(entry[0], (int, float)) else 0.0
        out.append((float(logprob), pairs[:top]))
    return out
