"""vLLM's reasoning parser and tool parser ``deepseek_recipe``, backed by this library's stream
parser.

vLLM composes a request's output parsing from a reasoning parser (until the reasoning block
ends) and a tool parser (the rest). Both of these parse the output's token ids as they stream
(special tokens are symbols, never their spelling in text), with :class:`OutputParser`: a
partial marker or a partial UTF-8 character is held back only until it is decided, tool-call
arguments stream as JSON fragments while the model writes them, and no DSML markup reaches
content or arguments. vLLM hands parsers only text on its non-streaming path; that text is
parsed the same way, as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.reasoning import ReasoningParser
from vllm.tokenizers import TokenizerLike
from vllm.tool_parsers import ToolParser

from deepseek_recipe._native import ConversionOptions, SpecialToken, SpecialTokens
from deepseek_recipe.vllm._chat import thinking_mode
from deepseek_recipe.vllm._deltas import Delta, OutputParser
from deepseek_recipe.vllm._library import library_tokenizer, special_id

_SPECIAL = SpecialTokens()


class DeepseekRecipeReasoningParser(ReasoningParser):
    """The reasoning block: ``<think>`` … ``</think>``, decided on token ids."""

    engine_based_streaming = True

    def __init__(self, tokenizer: TokenizerLike, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self._tokenizer = library_tokenizer(tokenizer)
        start = special_id(self._tokenizer, SpecialToken.ThinkingStart)
        end = special_id(self._tokenizer, SpecialToken.ThinkingEnd)
        if start is None or end is None:
            raise ValueError("the tokenizer has no single-token <think> and </think>")
        self._start_id, self._end_id = start, end
        self._end_of_sentence = special_id(self._tokenizer, SpecialToken.Eos)
        template_kwargs = kwargs.get("chat_template_kwargs") or {}
        # Until the prompt says otherwise (streaming), the request's thinking mode decides.
        self._in_reasoning = thinking_mode(template_kwargs, ConversionOptions())
        self._stream: OutputParser | None = None

    @property
    def reasoning_start_str(self) -> str:
        return _SPECIAL.token(SpecialToken.ThinkingStart)

    @property
    def reasoning_end_str(self) -> str:
        return _SPECIAL.token(SpecialToken.ThinkingEnd)

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """The last thinking marker in ``input_ids`` closes the block (a prompt in thinking mode
        ends with ``<think>``; earlier turns' ``</think>`` do not count)."""
        for token in reversed(input_ids):
            if token == self._end_id:
                return True
            if token == self._start_id:
                return False
        return False

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Any) -> bool:
        return self._end_id in delta_ids or self.is_reasoning_end(input_ids)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        """The ids after the first ``</think>`` (none while reasoning goes on)."""
        try:
            return input_ids[input_ids.index(self._end_id) + 1 :]
        except ValueError:
            return []

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        self._in_reasoning = not self.is_reasoning_end(prompt_token_ids)

    def adjust_request(self, request: Any) -> Any:
        request.skip_special_tokens = False  # the text path needs the markers spelled
        return request

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        """The output ids before ``</think>`` (all of them while it has not come), the end of
        sentence that stops an output not counted."""
        if not self._in_reasoning:
            return 0
        ids = list(token_ids)
        reasoning = ids[: ids.index(self._end_id)] if self._end_id in ids else ids
        return sum(token != self._end_of_sentence for token in reasoning)

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        parser = OutputParser(self._tokenizer, reasoning=self._in_reasoning, tool_calls=False)
        delta = _join(parser.push_text(model_output), parser.finish())
        return delta.reasoning or None, delta.content or None

    def extract_reasoning_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
    ) -> DeltaMessage | None:
        if self._stream is None:
            self._stream = OutputParser(self._tokenizer, reasoning=self._in_reasoning, tool_calls=False)
        return _message(self._stream.push_ids(delta_token_ids))

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._stream is not None and self._stream.reasoning_ended

    def finish_streaming(self) -> DeltaMessage | None:
        """What was held back when the block ended (or the output did)."""
        return None if self._stream is None else _message(self._stream.finish())


class DeepseekRecipeToolParser(ToolParser):
    """Content and DSML tool calls after the reasoning block, decided on token ids."""

    engine_based_streaming = True
    # The same DSML the xgrammar builtin structural tag describes (required / named tool choice).
    structural_tag_model = "deepseek_v4"

    def __init__(self, tokenizer: TokenizerLike, tools: list[Any] | None = None) -> None:
        super().__init__(tokenizer, tools)
        self._tokenizer = library_tokenizer(tokenizer)
        self._stream: OutputParser | None = None
        # Set by vLLM when no reasoning parser runs: reasoning markup is then plain content.
        self.skip_reasoning_parsing = False

    def adjust_request(self, request: Any) -> Any:
        request = super().adjust_request(request)
        request.skip_special_tokens = False
        return request

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        parser = self._parser(request)
        delta = _join(parser.push_text(model_output), parser.finish())
        calls: list[ToolCall] = []
        for piece in delta.tool_calls:
            if piece.id is not None:
                calls.append(ToolCall(id=piece.id, function=FunctionCall(name=piece.name or "", arguments="")))
            if piece.arguments and calls:
                calls[-1].function.arguments += piece.arguments
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=delta.content or None)

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        if self._stream is None:
            self._stream = self._parser(request)
        return _message(self._stream.push_ids(delta_token_ids))

    def finish_streaming(self) -> DeltaMessage | None:
        return None if self._stream is None else _message(self._stream.finish())

    def _parser(self, request: Any) -> OutputParser:
        stop = getattr(request, "stop", None) or ()
        if getattr(request, "include_stop_str_in_output", False):
            stop = ()
        return OutputParser(
            self._tokenizer,
            reasoning=False,
            tool_calls=getattr(request, "tool_choice", "auto") != "none",
            stop=[stop] if isinstance(stop, str) else list(stop),
        )


def _join(first: Delta, second: Delta) -> Delta:
    return Delta(
        first.reasoning + second.reasoning, first.content + second.content, first.tool_calls + second.tool_calls
    )


def _message(delta: Delta) -> DeltaMessage | None:
    if not delta:
        return None
    calls: list[DeltaToolCall] = []
    for piece in delta.tool_calls:
        last = calls[-1] if calls else None
        if last is not None and piece.id is None and last.index == piece.index and last.function is not None:
            last.function.arguments = (last.function.arguments or "") + (piece.arguments or "")
            continue
        calls.append(
            DeltaToolCall(
                index=piece.index,
                id=piece.id,
                type="function" if piece.id is not None else None,
                function=DeltaFunctionCall(name=piece.name, arguments=piece.arguments),
            )
        )
    return DeltaMessage(reasoning=delta.reasoning or None, content=delta.content or None, tool_calls=calls)
