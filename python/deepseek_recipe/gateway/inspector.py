"""What the page shows, computed: :class:`Inspector` composes library calls (``Frontend.prepare``
through the gateway's :class:`~deepseek_recipe.gateway.intake.Intake`, the encodings'
``render_conversation``, ``Tokenizer.encode_ordinary`` / ``encode`` / ``decode`` /
``token_bytes``, ``Decoder``) into JSON-ready answers, so the page shows exactly what the
gateway does. Serving them is ``webui.py``'s job; the JSON of native objects is
``projections.py``'s.

Limits of its own: a decoded output of at most :data:`MAX_OUTPUT_CHARS` characters or
:data:`MAX_OUTPUT_IDS` ids, replayed in at most :data:`MAX_REPLAY_STEPS` steps that each cost
one chunk.

A request's own failure (bad JSON, an unknown model, a rule broken) is not an error of the
API: it is reported inside the answer as ``client_error``, the status and body a client of the
gateway gets for that request.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from typing import Any, NamedTuple, cast

import orjson

from deepseek_recipe._native import ConversionError, ConversionOptions, TokenizerError, __version__, block_hashes
from deepseek_recipe.frontend import (
    FINISH_REASONS,
    PROTOCOLS,
    REQUEST_CLASSES,
    Decoder,
    Event,
    PreparedRequest,
    Protocol,
)
from deepseek_recipe.gateway.errors import GatewayError
from deepseek_recipe.gateway.intake import Intake
from deepseek_recipe.gateway.projections import VERSION_NAMES, conversation_json, request_json

DEFAULT_BLOCK_SIZE = 128
MAX_BLOCK_SIZE = 1 << 20
MAX_REPLAY_STEPS = 1024
"""Decode replays at most this many chunks; a longer output is cut into larger chunks."""
MAX_OUTPUT_CHARS = 1_000_000
"""The longest output text decode takes."""
MAX_OUTPUT_IDS = 250_000
"""The most output ids decode takes."""
MAX_HELD_CHARS = 4096
"""Characters of held-back text a step shows (the rest is counted in ``held_omitted``)."""


class BadInput(Exception):
    """An API call whose own input is wrong (400, OpenAI shape)."""


class Inspector:
    """What the page shows, computed with the gateway's own frontend and error mapping.

    Every method takes the decoded JSON of one API call and returns the JSON-ready answer;
    :class:`BadInput` reports a wrong call. Thread-safe (the frontend is).
    """

    def __init__(self, intake: Intake) -> None:
        self.intake = intake
        self.frontend = intake.frontend
        self.tokenizer = intake.frontend.tokenizer
        served = self.frontend.options.model_versions_by_name
        # Render every model the library knows, not only the ones this tokenizer can encode
        # (V4.1 prompts render with the V4 tokenizer; they only fail to encode).
        self.display_options = self.frontend.options.with_model_versions_by_name(
            {**ConversionOptions().model_versions_by_name, **served}
        )
        self._bytes: dict[int, bytes] = {}

    # -- endpoints ------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        served = self.frontend.options.model_versions_by_name
        models = [
            {"name": name, "version": VERSION_NAMES[version], "served": name in served}
            for name, version in sorted(self.display_options.model_versions_by_name.items())
        ]
        return {
            "version": __version__,
            "protocols": list(PROTOCOLS),
            "models": models,
            "block_size": DEFAULT_BLOCK_SIZE,
            "max_replay_steps": MAX_REPLAY_STEPS,
            "max_output_chars": MAX_OUTPUT_CHARS,
            "max_output_ids": MAX_OUTPUT_IDS,
            "default_thinking": self.frontend.options.default_thinking_mode,
        }

    def render(self, call: dict[str, Any]) -> dict[str, Any]:
        """One request as the gateway sees it (see :meth:`_render`)."""
        return self._render(_protocol(call.get("protocol")), _body(call, "body"))

    def tokenize(self, call: dict[str, Any]) -> dict[str, Any]:
        """Text to ids: injection-safe (as request text is encoded), or with added tokens
        matched (as a model's output spells them)."""
        text = call.get("text")
        if not isinstance(text, str):
            raise BadInput("`text` must be a string")
        added = call.get("added_tokens", False)
        if not isinstance(added, bool):
            raise BadInput("`added_tokens` must be true or false")
        ids = self.tokenizer.encode(text) if added else self.tokenizer.encode_ordinary(text)
        return {"ids": ids, "token_lengths": self._lengths(ids)}

    def detokenize(self, call: dict[str, Any]) -> dict[str, Any]:
        ids = _ids(call.get("ids"))
        lengths = self._lengths(ids)
        return {"text": self.tokenizer.decode(ids), "token_lengths": lengths}

    def decode(self, call: dict[str, Any]) -> dict[str, Any]:
        """The model's output through the request's decoder, one chunk at a time.

        Each step lists the chunk, the events it produced (SSE-framed too) and ``held``: the
        text the decoder is holding back after it (a possible ``</think>``, tool-call markup or
        stop sequence), which ending the output there would flush. Every step costs its chunk
        and what is held, never a replay of the chunks before it.
        """
        protocol = _protocol(call.get("protocol"))
        body = _body(call, "body")
        output = call.get("output")
        if not isinstance(output, dict) or ("text" in output) == ("ids" in output):
            raise BadInput('`output` must be {"text": ...} or {"ids": [...]}')
        size = call.get("chunk_size", 1)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise BadInput("`chunk_size` must be a positive integer")
        finish = call.get("finish_reason", "stop")
        if finish is not None and finish not in FINISH_REASONS:
            raise BadInput("`finish_reason` must be stop, length, content_filter or null")
        prepared, client_error = self._prepare(protocol, body)
        if prepared is None:
            return {"protocol": protocol, "client_error": client_error}

        chunks: list[_Chunk]
        output_lengths = None
        if "ids" in output:
            ids = _ids(output["ids"])
            if len(ids) > MAX_OUTPUT_IDS:
                raise BadInput(f"`output.ids` holds more than {MAX_OUTPUT_IDS} ids")
            output_lengths = self._lengths(ids)  # every id must be in the vocabulary
            text = self.tokenizer.decode(ids)
            size = max(size, math.ceil(len(ids) / MAX_REPLAY_STEPS))
            chunks = [_Chunk(ids[i : i + size], None, 0) for i in range(0, len(ids), size)]
        else:
            text = output["text"]
            if not isinstance(text, str):
                raise BadInput("`output.text` must be a string")
            if len(text) > MAX_OUTPUT_CHARS:
                raise BadInput(f"`output.text` is longer than {MAX_OUTPUT_CHARS} characters")
            size = max(size, math.ceil(len(text) / MAX_REPLAY_STEPS))
            pieces = [text[i : i + size] for i in range(0, len(text), size)]
            # A text engine reports token counts, not boundaries: the text's tokens (encoded as
            # a model spells them) are spread evenly over the pieces, so usage adds up.
            total, n = len(self.tokenizer.encode(text)), len(pieces)
            counts = [(i + 1) * total // n - i * total // n for i in range(n)]
            chunks = [_Chunk(None, piece, count) for piece, count in zip(pieces, counts)]

        decoder = prepared.decoder()
        start = self._step(decoder, decoder.start(prompt_tokens=len(prepared.prompt_ids)))
        steps: list[dict[str, Any]] = []
        stopped = None
        for index, chunk in enumerate(chunks):
            try:
                events = chunk.push(decoder)
            except RuntimeError as error:
                raise BadInput(f"the decoder refused chunk {index}: {error}") from None
            step = self._step(decoder, events)
            step["ids"] = chunk.ids
            step["text"] = chunk.text if chunk.ids is None else self.tokenizer.decode(chunk.ids)
            step["held"], step["held_omitted"] = _held(decoder)
            steps.append(step)
            if decoder.finished:
                stopped = index
                break
        end = self._step(decoder, decoder.finish(finish))
        end["sse"] += decoder.sse_done().decode()
        return {
            "protocol": protocol,
            "client_error": None,
            "input": "ids" if "ids" in output else "text",
            "chunk_size": size,
            "output_text": text,
            "output_token_lengths": output_lengths,
            "start": start,
            "steps": steps,
            "end": end,
            "stopped_at": stopped,
            "response": orjson.loads(decoder.response()),
        }

    def compare(self, call: dict[str, Any]) -> dict[str, Any]:
        """The same conversation in several protocols: is the engine given the same ids?"""
        bodies = call.get("bodies")
        if not isinstance(bodies, dict) or not bodies:
            raise BadInput("`bodies` must map protocols to request bodies")
        results = {protocol: self._render(_protocol(protocol), _body(bodies, protocol)) for protocol in bodies}
        encoded = {p: r["token_ids"] for p, r in results.items() if r["token_ids"] is not None}
        identical = len(encoded) == len(results) and len({tuple(ids) for ids in encoded.values()}) == 1
        difference = None
        if len(encoded) >= 2 and not identical:
            lists = list(encoded.values())
            index = min(_common_prefix(lists[0], other) for other in lists[1:])
            difference = {
                "index": index,
                "ids": {p: ids[index] if index < len(ids) else None for p, ids in encoded.items()},
            }
        return {"results": results, "identical": identical, "first_difference": difference}

    def blocks(self, call: dict[str, Any]) -> dict[str, Any]:
        """Two requests cut into the engine's KV blocks: how many leading blocks they share.

        An engine with prefix caching reuses a block only when it is full and every token up to
        its end is the same (each block's hash covers everything before it), so the shared
        blocks are the full blocks inside the longest common prefix of the two id lists.
        """
        protocol = _protocol(call.get("protocol"))
        protocol_b = _protocol(call.get("protocol_b", protocol))
        size = call.get("block_size", DEFAULT_BLOCK_SIZE)
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_BLOCK_SIZE:
            raise BadInput(f"`block_size` must be an integer from 1 to {MAX_BLOCK_SIZE}")
        a = self._render(protocol, _body(call, "a"))
        b = self._render(protocol_b, _body(call, "b"))
        answer: dict[str, Any] = {
            "block_size": size,
            "a": a,
            "b": b,
            "common_prefix": None,
            "shared_blocks": None,
            "full_blocks": None,
            "block_hashes": None,
            "first_divergence": None,
        }
        ids_a, ids_b = a["token_ids"], b["token_ids"]
        if ids_a is None or ids_b is None:
            return answer
        common = _common_prefix(ids_a, ids_b)
        if common < max(len(ids_a), len(ids_b)):
            answer["first_divergence"] = {
                "index": common,
                "a": ids_a[common] if common < len(ids_a) else None,
                "b": ids_b[common] if common < len(ids_b) else None,
            }
        # The router's own block hashes: a block is shared when its chained hash is.
        hashes_a, hashes_b = block_hashes(ids_a, size), block_hashes(ids_b, size)
        shared = next(
            (k for k, (x, y) in enumerate(zip(hashes_a, hashes_b)) if x != y), min(len(hashes_a), len(hashes_b))
        )
        answer.update(
            common_prefix=common,
            shared_blocks=shared,
            full_blocks={"a": len(hashes_a), "b": len(hashes_b)},
            block_hashes={"a": [f"{h:016x}" for h in hashes_a], "b": [f"{h:016x}" for h in hashes_b]},
        )
        return answer

    # -- pieces ---------------------------------------------------------------------------------

    def _prepare(self, protocol: Protocol, body: bytes) -> tuple[PreparedRequest | None, dict[str, Any] | None]:
        """The gateway's own preparation, or the status and body its client would get."""
        try:
            return self.intake.prepare(protocol, body), None
        except GatewayError as error:
            return None, {"status": error.status, "body": orjson.loads(error.body(protocol))}

    def _render(self, protocol: Protocol, body: bytes) -> dict[str, Any]:
        """One request: what the client gets, and what the engine would be given.

        ``token_ids`` are the ids the gateway sends (``None`` when it refuses the request);
        the prompt is rendered even then when the request converts for some model the library
        knows (a V4.1 request with a tokenizer that cannot encode V4.1). ``token_lengths`` are
        the tokens' UTF-8 lengths: their bytes, in order, are the prompt's. ``special_ranges``
        and ``lookalike_ranges`` are code-point ranges of the prompt: template tokens, and plain
        text that spells an added token (typed by a user or a tool; encoded as ordinary tokens).
        ``special_tokens`` are the indices of the tokens inside special ranges.
        """
        prepared, client_error = self._prepare(protocol, body)
        answer: dict[str, Any] = {
            "protocol": protocol,
            "client_error": client_error,
            "model": None,
            "model_version": None,
            "request": None,
            "conversation": None,
            "prompt": None,
            "special_ranges": [],
            "lookalike_ranges": [],
            "token_ids": None,
            "token_lengths": None,
            "special_tokens": [],
            "encode_error": None,
            "alignment_error": None,
            "counts": None,
        }
        try:
            request = REQUEST_CLASSES[protocol](body)
            answer["model"] = request.model
            converted = request.convert(self.display_options)
        except (ValueError, ConversionError):
            return answer  # the client error says why
        encoding = self.frontend.encoding(converted.model_version)
        rendered = encoding.render_conversation(converted.conversation)
        prompt, ranges = rendered.prompt, rendered.special_ranges
        ids = prepared.prompt_ids.tolist() if prepared is not None else None
        if ids is None:
            # Refused, yet it renders: say why this tokenizer could not encode it, if it cannot.
            try:
                rendered.encode(self.tokenizer)
            except TokenizerError as error:
                answer["encode_error"] = str(error)
        lookalikes = self._lookalikes(prompt, ranges)
        answer.update(
            model_version=VERSION_NAMES[converted.model_version],
            request=request_json(converted, prepared),
            conversation=conversation_json(converted.conversation),
            prompt=prompt,
            special_ranges=ranges,
            lookalike_ranges=lookalikes,
        )
        counts: dict[str, int | None] = {
            "characters": len(prompt),
            "bytes": len(prompt.encode()),
            "special_ranges": len(ranges),
            "segments": sum(1 for start, end in _plain_segments(prompt, ranges) if end > start),
            "lookalikes": len(lookalikes),
            "tokens": None,
            "special_tokens": None,
        }
        if ids is not None:
            answer["token_ids"] = ids
            counts["tokens"] = len(ids)
            lengths = self._lengths(ids)
            if b"".join(self._bytes[i] for i in ids) == prompt.encode():
                special = _tokens_in_ranges(prompt, ranges, lengths)
                answer.update(token_lengths=lengths, special_tokens=special)
                counts["special_tokens"] = len(special)
            else:  # a placeholder the encoder expands, say: no boundaries to show in the prompt
                answer["alignment_error"] = "the token ids do not spell the rendered prompt"
        answer["counts"] = counts
        return answer

    def _lengths(self, ids: list[int]) -> list[int]:
        """Each token's byte length (its bytes cached); :class:`BadInput` for an unknown id."""
        cache, lookup = self._bytes, self.tokenizer.token_bytes
        lengths = []
        for token in ids:
            data = cache.get(token)
            if data is None:
                found = lookup(token)
                if found is None:
                    raise BadInput(f"token id {token} is not in the vocabulary")
                data = cache[token] = found
            lengths.append(len(data))
        return lengths

    def _lookalikes(self, prompt: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Code-point ranges of plain text that a full-vocabulary encoder would have taken for
        an added token (``<｜User｜>`` typed by a user). The library never does: these are
        encoded as ordinary tokens. Found by asking the tokenizer, segment by segment."""
        tokenizer, found = self.tokenizer, []
        for start, end in _plain_segments(prompt, ranges):
            segment = prompt[start:end]
            if not segment:
                continue
            naive = tokenizer.encode(segment)
            if naive == tokenizer.encode_ordinary(segment):
                continue
            ends = list(_char_byte_ends(segment))
            offset = 0
            for token, length in zip(naive, self._lengths(naive)):
                piece = self._bytes[token].decode(errors="replace")
                # An added token: the full-vocabulary encoder makes it one id, the safe one not.
                if tokenizer.encode(piece) == [token] != tokenizer.encode_ordinary(piece):
                    first = bisect.bisect_right(ends, offset)
                    last = bisect.bisect_left(ends, offset + length) + 1
                    found.append((start + first, start + last))
                offset += length
        return found

    def _step(self, decoder: Decoder, events: list[Event]) -> dict[str, Any]:
        """Events as the page shows them (name and JSON) and SSE-framed, then folded into the
        decoder's response (which consumes them)."""
        sse = decoder.sse(events).decode()
        shown = [_event_json(decoder.protocol, event) for event in events]
        decoder.accumulate(events)
        return {"events": shown, "sse": sse}


class _Chunk(NamedTuple):
    """One piece of the model's output: token ids, or text with its token count."""

    ids: list[int] | None
    text: str | None
    token_count: int

    def push(self, decoder: Decoder) -> list[Event]:
        if self.ids is not None:
            return decoder.push_tokens(self.ids)
        return decoder.push_text(self.text or "", self.token_count)


def _held(decoder: Decoder) -> tuple[list[dict[str, Any]], int]:
    """What ``decoder`` holds back, as ``{kind, text, index}`` pieces of at most
    :data:`MAX_HELD_CHARS` characters in all, and how many characters were left out."""
    pieces, room, omitted = [], MAX_HELD_CHARS, 0
    for kind, text, index in decoder.held_back():
        shown = text[:room]
        room -= len(shown)
        omitted += len(text) - len(shown)
        if shown:
            pieces.append({"kind": kind, "text": shown, "index": index})
    return pieces, omitted


def _protocol(value: Any) -> Protocol:
    if value not in PROTOCOLS:
        raise BadInput("`protocol` must be one of chat, responses, messages")
    return cast(Protocol, value)


def _body(call: dict[str, Any], key: str) -> bytes:
    """A request body as its client sends it: the editor's text, or a JSON value."""
    value = call.get(key)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict):
        return orjson.dumps(value)
    raise BadInput(f"`{key}` must be a request body (a string of JSON, or an object)")


def _ids(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 1 << 32 for i in value
    ):
        raise BadInput("`ids` must be a list of token ids (non-negative integers)")
    return value


def _event_json(protocol: Protocol, event: Event) -> dict[str, Any]:
    data = orjson.loads(event.to_json())
    name = data.get("type") if protocol != "chat" else None
    return {"event": name, "data": data}


def _common_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _plain_segments(prompt: str, ranges: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The code-point ranges between special ranges (possibly empty)."""
    last = 0
    for start, end in ranges:
        yield last, start
        last = end
    yield last, len(prompt)


def _char_byte_ends(text: str) -> Iterator[int]:
    """The UTF-8 byte offset where each character of ``text`` ends."""
    offset = 0
    for char in text:
        code = ord(char)
        offset += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        yield offset


def _tokens_in_ranges(prompt: str, ranges: list[tuple[int, int]], lengths: list[int]) -> list[int]:
    """Indices of the tokens whose bytes lie inside a special range."""
    if not ranges:
        return []
    ends = list(_char_byte_ends(prompt))
    byte_ranges = [(ends[start - 1] if start else 0, ends[end - 1]) for start, end in ranges]
    special, offset, r = [], 0, 0
    for index, length in enumerate(lengths):
        while r < len(byte_ranges) and byte_ranges[r][1] <= offset:
            r += 1
        if r < len(byte_ranges) and byte_ranges[r][0] <= offset and offset + length <= byte_ranges[r][1]:
            special.append(index)
        offset += length
    return special
