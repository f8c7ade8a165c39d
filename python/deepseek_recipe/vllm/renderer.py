"""vLLM's renderer mode ``deepseek_recipe``: chat requests become this library's exact prompt ids.

vLLM renders every chat-shaped request (Chat Completions, Responses, Anthropic Messages) by
calling a renderer with its chat messages and template settings. This one converts them with
the library's Chat Completions rules, renders the official prompt and encodes it with typed
special tokens kept as text, then hands vLLM the ids (and the prompt text) as a tokens prompt,
so vLLM's own tokenizer never sees the prompt string.

The tokenizer mode of the same name is vLLM's plain Hugging Face tokenizer (vLLM detokenizes
output with it); only the renderer is ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vllm.config import VllmConfig
from vllm.exceptions import VLLMValidationError
from vllm.renderers.base import BaseRenderer
from vllm.renderers.inputs.preprocess import parse_dec_only_prompt
from vllm.renderers.params import ChatParams
from vllm.tokenizers import TokenizerLike
from vllm.utils.async_utils import make_async

from deepseek_recipe._native import (
    ChatCompletionRequest,
    ConversionError,
    ConversionOptions,
    ModelVersion,
    TokenizerError,
)
from deepseek_recipe.vllm._chat import chat_body
from deepseek_recipe.vllm._library import library_tokenizer
from deepseek_recipe.vllm._model import model_version

#: The architectures vLLM serves as DeepSeek V4.1 (its own ``deepseek_v41`` tokenizer mode).
_V41_ARCHITECTURES = frozenset({"DeepseekV41ForCausalLM"})


class DeepseekRecipeRenderer(BaseRenderer[TokenizerLike]):
    """Renders chat messages to the official encoder's ids (see the module doc)."""

    def __init__(self, config: VllmConfig, tokenizer: TokenizerLike | None) -> None:
        super().__init__(config, tokenizer)
        model_config = config.model_config
        self._tokenizer = library_tokenizer(tokenizer, model_config.tokenizer)
        self._options = ConversionOptions()
        names = model_config.served_model_name
        served = [names] if isinstance(names, str) else list(names or [])
        v41 = bool(set(model_config.architectures or ()) & _V41_ARCHITECTURES)
        self._version = model_version(served, self._options.model_versions_by_name, v41)
        # Conversion takes a model name; any name of the chosen version will do.
        self._model_name = next(n for n, v in self._options.model_versions_by_name.items() if v == self._version)
        self._encoding = self._version.encoding().with_tokenizer(self._tokenizer)
        self._render_async = make_async(self._render, executor=self._executor)

    @property
    def model_version(self) -> ModelVersion:
        """The prompt format every request is rendered in."""
        return self._version

    def render_messages(self, messages: list[Any], params: ChatParams) -> tuple[list[Any], Any]:
        return self._render(messages, params)

    async def render_messages_async(self, messages: list[Any], params: ChatParams) -> tuple[list[Any], Any]:
        rendered: tuple[list[Any], Any] = await self._render_async(messages, params)
        return rendered

    def _render(self, messages: Sequence[Any], params: ChatParams) -> tuple[list[Any], Any]:
        body = chat_body(
            messages,
            model=self._model_name,
            template_kwargs=params.chat_template_kwargs,
            tool_choice=params.tool_choice,
            response_format=params.response_format,
        )
        try:
            converted = ChatCompletionRequest(body).convert(self._options)
            rendered = self._encoding.render_conversation(converted.conversation)
            ids = rendered.encode_ids(self._tokenizer)
        except (ValueError, ConversionError) as error:
            raise VLLMValidationError(str(error)) from None
        except TokenizerError as error:
            raise VLLMValidationError(f"the prompt cannot be encoded: {error}") from None
        if rendered.image_sources:
            raise VLLMValidationError("image input is not supported by the deepseek_recipe renderer")
        prompt = parse_dec_only_prompt(ids.tolist())
        prompt["prompt"] = rendered.prompt
        return list(messages), prompt
