"""The embedded demo engine: a token-in, token-out "model" with no weights.

It reads the prompt ids it is given the way a model would (template tokens are ids of their
own, so text a user typed can never pass for structure) and writes realistic DeepSeek output
for it, token by token through the real tokenizer, so that every stage of the gateway runs for
real:

- thinking on (the prompt ends with ``<think>``): a short reasoning, then ``</think>``;
- tools declared and the last turn is not a tool result: a DSML tool call to the first tool,
  with a value for each of its parameters (strings as text, other types as JSON), in the
  dialect of the prompt's tools block;
- otherwise an answer: the first tool result, or the user's message, quoted back; as JSON when
  the request asked for JSON output.

Echoed text has ``<`` and ``>`` replaced by ``‹`` and ``›``, so that a user cannot make the
demo "say" markup. Output is deterministic: the same prompt gives the same ids. The engine
also keeps a small prefix cache of the prompts it has seen, in blocks of ``block_size``
tokens, and reports the cached part of each prompt as engines with prefix caching do.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import anyio
import anyio.lowlevel

from deepseek_recipe._native import SpecialToken, SpecialTokens, Tokenizer, block_hashes
from deepseek_recipe.backends import Backend, BackendChunk, GenerationRequest

_SCHEMAS_HEADING = "### Available Tool Schemas\n\n"
_SCHEMAS_END = "\n\nYou MUST strictly follow"
_TOOL_RESULT = "<tool_result>"


class DemoEngine(Backend):
    """Deterministic output for any DeepSeek V4 prompt; ``token_delay`` seconds per token."""

    takes_images = True  # it says how many it got

    name = "demo"

    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        special_tokens: SpecialTokens | None = None,
        token_delay: float = 0.0,
        block_size: int = 128,
        cached_blocks: int = 65_536,
    ) -> None:
        self._tokenizer = tokenizer
        spell = (special_tokens or SpecialTokens()).token
        self._spell = spell
        self._ids = {
            token: ids[0]
            for token in (SpecialToken.User, SpecialToken.Assistant, SpecialToken.ThinkingStart)
            if len(ids := tokenizer.encode(spell(token))) == 1
        }
        self._delay = token_delay
        self._block_size = block_size
        self._cache: OrderedDict[int, None] = OrderedDict()
        self._cached_blocks = cached_blocks
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def generate(self, request: GenerationRequest) -> AsyncGenerator[BackendChunk, None]:
        self._in_flight += 1
        try:
            prompt = list(request.prompt_ids)
            usage = len(prompt) + request.image_tokens
            yield BackendChunk(prompt_tokens=usage, cached_tokens=self._cached_prefix(prompt))
            ids = self.write(prompt, json_output=_wants_json(request), images=len(request.images))
            finish: Any = "stop"
            if len(ids) > request.sampling.max_tokens:
                ids, finish = ids[: request.sampling.max_tokens], "length"
            alternatives = request.sampling.top_logprobs or 0
            for choice in range(max(request.sampling.n, 1)):  # several samples: the same output each
                for index, token in enumerate(ids):
                    if self._delay:
                        await anyio.sleep(self._delay)
                    else:
                        await anyio.lowlevel.checkpoint()
                    logprobs = None
                    if request.sampling.logprobs:
                        top = [(token, -0.125)] + [((token + k) % 100_000, -2.0 - k) for k in range(1, alternatives)]
                        logprobs = [(-0.125, top[:alternatives])]
                    last = index == len(ids) - 1
                    yield BackendChunk(
                        token_ids=[token], logprobs=logprobs, finish_reason=finish if last else None, index=choice
                    )
                if not ids:
                    yield BackendChunk(finish_reason=finish, index=choice)
        finally:
            self._in_flight -= 1

    # -- reading the prompt and writing the output -----------------------------------------

    def write(self, prompt: Sequence[int], *, json_output: bool = False, images: int = 0) -> list[int]:
        """The output ids for ``prompt`` (see the module doc)."""
        user, assistant = self._ids.get(SpecialToken.User), self._ids.get(SpecialToken.Assistant)
        last_user = _last_index(prompt, user)
        last_assistant = _last_index(prompt, assistant)
        first_user = prompt.index(user) if last_user >= 0 else len(prompt)
        turn = self._tokenizer.decode(list(prompt[last_user + 1 : max(last_assistant, last_user + 1)]))
        head = self._tokenizer.decode(list(prompt[:first_user]))
        thinking = bool(prompt) and prompt[-1] == self._ids.get(SpecialToken.ThinkingStart)
        tools = _tool_schemas(head)
        call = tools[0] if tools and not turn.startswith(_TOOL_RESULT) else None

        parts: list[tuple[str, bool]] = []  # (text, may hold template tokens)
        if thinking:
            plan = f"I should call `{call['name']}`." if call else "I can answer directly."
            parts.append((f"The user's last turn has {len(turn)} characters. {plan}", False))
            parts.append((self._spell(SpecialToken.ThinkingEnd), True))
        if call:
            parts.append((self._tool_call(call, turn, dialect_v41="｜DSML｜ calls>" in head), True))
        else:
            parts.append((_answer(turn, json_output, images), False))
        ids: list[int] = []
        for text, structural in parts:
            ids += self._tokenizer.encode(text) if structural else self._tokenizer.encode_ordinary(text)
        return ids

    def _tool_call(self, tool: dict[str, Any], turn: str, *, dialect_v41: bool) -> str:
        dsml = self._spell(SpecialToken.Dsml)
        sep, block = (" ", "calls") if dialect_v41 else ("", "tool_calls")
        properties = (tool.get("parameters") or {}).get("properties") or {}
        lines = [f"\n\n<{dsml}{sep}{block}>", f'<{dsml}{sep}invoke name="{tool["name"]}">']
        for name, schema in properties.items():
            value = _example_value(schema if isinstance(schema, dict) else {}, _quote(turn, 40))
            is_string = isinstance(value, str)
            text = value if is_string else json.dumps(value)
            lines.append(
                f'<{dsml}{sep}parameter name="{name}" string="{"true" if is_string else "false"}">'
                f"{text}</{dsml}{sep}parameter>"
            )
        lines += [f"</{dsml}{sep}invoke>", f"</{dsml}{sep}{block}>"]
        return "\n".join(lines)

    def _cached_prefix(self, prompt: Sequence[int]) -> int:
        """Tokens of ``prompt`` in leading blocks seen before; remembers its blocks."""
        hit, counting = 0, True
        for block in block_hashes(prompt, self._block_size):  # the library's chained block hashes
            if counting and block in self._cache:
                self._cache.move_to_end(block)
                hit += self._block_size
                continue
            counting = False
            self._cache[block] = None
            if len(self._cache) > self._cached_blocks:
                self._cache.popitem(last=False)
        return hit


def _last_index(ids: Sequence[int], token: int | None) -> int:
    if token is None:
        return -1
    for index in range(len(ids) - 1, -1, -1):
        if ids[index] == token:
            return index
    return -1


def _tool_schemas(head: str) -> list[dict[str, Any]]:
    """The tool schemas of a prompt's tools block (one JSON object per line)."""
    start = head.find(_SCHEMAS_HEADING)
    if start < 0:
        return []
    body = head[start + len(_SCHEMAS_HEADING) :].split(_SCHEMAS_END, 1)[0]
    tools = []
    for line in body.splitlines():
        try:
            tool = json.loads(line)
        except ValueError:
            continue
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            tools.append(tool)
    return tools


def _quote(text: str, limit: int) -> str:
    """``text``'s first line, cut to ``limit`` characters, with no angle brackets."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = line.replace("<", "‹").replace(">", "›")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _answer(turn: str, json_output: bool, images: int = 0) -> str:
    if turn.startswith(_TOOL_RESULT):
        result = turn[len(_TOOL_RESULT) :].split("</tool_result>", 1)[0]
        text = f"The tool returned: {_quote(result, 200)}"
    else:
        text = f"You said: “{_quote(turn, 200)}”. I am the deepseek-recipe demo engine: no weights, just echoes."
        if images:
            text += f" I received {images} image{'s' if images != 1 else ''}, but cannot see them."
    return json.dumps({"answer": text}, ensure_ascii=False) if json_output else text


def _example_value(schema: dict[str, Any], text: str) -> Any:
    """A value that fits ``schema``'s type (its first enum value when it has one)."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if not isinstance(kind, str):
        return text or "demo"
    return {
        "integer": 3,
        "number": 1.5,
        "boolean": True,
        "array": [],
        "object": {},
        "null": None,
    }.get(kind, text or "demo")


def _wants_json(request: GenerationRequest) -> bool:
    constraint = request.output_constraint
    return constraint is not None and constraint.kind == "json"
