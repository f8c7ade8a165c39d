"""One model output parsed by this library's stream parser into chat deltas (pure: tested
without vLLM).

:class:`OutputParser` feeds the output's token ids (or, where an engine only has text, the
text) to a :class:`~deepseek_recipe.StreamProcessor` with the Chat Completions emitter, and
returns what each push produced as one :class:`Delta`: reasoning text, content text and tool-call
pieces (a call's start with its id and name, then its arguments as JSON fragments as they
stream). Everything about the output format (reasoning markers, DSML tool calls, holdback of
partial markers and partial characters) is the Rust parser's; this module only reads the
chunks' ``delta`` fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson

from deepseek_recipe._native import (
    ChatCompletionChunk,
    ChatCompletionRequest,
    Conversation,
    ConversationRequest,
    InferenceChunk,
    MessagesStreamEvent,
    ModelVersion,
    ParsingOptions,
    ResponsesStreamEvent,
    SpecialToken,
    StreamProcessor,
    ThinkingInitialStage,
    Tokenizer,
)
from deepseek_recipe.vllm._library import special_id


@dataclass
class ToolCallDelta:
    """A piece of one tool call: its start (``id`` and ``name``) or an ``arguments`` fragment."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


@dataclass
class Delta:
    """What one push produced, merged: reasoning, content and tool-call pieces, in order."""

    reasoning: str = ""
    content: str = ""
    tool_calls: list[ToolCallDelta] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.reasoning or self.content or self.tool_calls)


class OutputParser:
    """Parses one output (see the module doc). Not for sharing across threads.

    ``reasoning``: the output starts inside the reasoning block (the prompt ended with the
    thinking start). ``tool_calls``: DSML tool-call markup is parsed into tool calls (otherwise
    it is content). ``stop``: stop sequences, matched on content only, as the official API does.
    The end of sentence (the id an engine stops on, and includes in its output ids) ends the
    output; it is not parsed.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        reasoning: bool,
        tool_calls: bool,
        stop: Sequence[str] = (),
        version: ModelVersion = ModelVersion.DeepseekV4Pro,
    ) -> None:
        request = ConversationRequest(Conversation([], thinking_mode=reasoning), version)
        generator = ChatCompletionRequest.chunk_generator(request, "chatcmpl-deepseek-recipe", "deepseek")
        options = ParsingOptions(
            parse_tool_calls=tool_calls,
            thinking_initial_stage=ThinkingInitialStage.ReasoningStart if reasoning else None,
            stop_sequences=list(stop),
        )
        self._processor = StreamProcessor(generator, options, tokenizer)
        self._processor.push(InferenceChunk.ready())
        self._thinking_end = special_id(tokenizer, SpecialToken.ThinkingEnd)
        self._end_of_sentence = special_id(tokenizer, SpecialToken.Eos)
        #: The parser has left the reasoning block (or never was in it): ``</think>`` came, as
        #: its id, or content or a tool call did.
        self.reasoning_ended = not reasoning
        self._tool_calls = 0

    @property
    def finished(self) -> bool:
        """The output is complete: its end, a stop sequence, or :meth:`finish`."""
        return self._processor.finished

    @property
    def tool_call_count(self) -> int:
        """How many tool calls have started."""
        return self._tool_calls

    def push_ids(self, ids: Sequence[int]) -> Delta:
        """Output token ids, as the engine produced them."""
        if self._end_of_sentence in ids:
            ids = [token for token in ids if token != self._end_of_sentence]
        if self._processor.finished or not ids:
            return Delta()
        delta = self._read(self._processor.push(InferenceChunk.tokens(ids)))
        if self._thinking_end in ids:
            self.reasoning_ended = True
        return delta

    def push_text(self, text: str) -> Delta:
        """Output text, for an engine that has only text."""
        if self._processor.finished or not text:
            return Delta()
        return self._read(self._processor.push(InferenceChunk.text(text, 0)))

    def finish(self) -> Delta:
        """The output ended: what was held back (partial markers, a partial tool call)."""
        return self._read(self._processor.finish())

    def _read(self, chunks: Sequence[ChatCompletionChunk | ResponsesStreamEvent | MessagesStreamEvent]) -> Delta:
        delta = Delta()
        for chunk in chunks:
            for choice in orjson.loads(chunk.to_json())["choices"]:
                self._merge(delta, choice["delta"])
        return delta

    def _merge(self, delta: Delta, piece: dict[str, object]) -> None:
        reasoning, content, calls = piece.get("reasoning_content"), piece.get("content"), piece.get("tool_calls")
        if isinstance(reasoning, str) and reasoning:
            delta.reasoning += reasoning
        if isinstance(content, str) and content:
            self.reasoning_ended = True
            delta.content += content
        if isinstance(calls, list):
            self.reasoning_ended = True
            for call in calls:
                function = call.get("function") or {}
                if call.get("id") is not None:
                    self._tool_calls += 1
                delta.tool_calls.append(
                    ToolCallDelta(
                        index=call["index"],
                        id=call.get("id"),
                        name=function.get("name"),
                        arguments=function.get("arguments") or None,
                    )
                )
