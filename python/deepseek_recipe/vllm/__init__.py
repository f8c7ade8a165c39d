"""``deepseek_recipe.vllm``: this library inside vLLM, as a plugin.

Installed next to vLLM, the package registers itself through vLLM's ``vllm.general_plugins``
entry point (vLLM calls :func:`register` in each of its processes). Then::

    vllm serve MODEL --tokenizer-mode deepseek_recipe \\
        --tool-call-parser deepseek_recipe --reasoning-parser deepseek_recipe --enable-auto-tool-choice

renders every chat-shaped request (Chat Completions, Responses, Anthropic Messages) to the
official encoder's exact prompt ids, with special tokens a user typed kept as text, and parses
the model's output (reasoning, content, DSML tool calls with streamed arguments) with this
library's stream parser, from the output's token ids.

Nothing else in the package imports this module or vLLM.
"""

from __future__ import annotations

import logging

NAME = "deepseek_recipe"
"""The name of the tokenizer mode, the renderer, the tool parser and the reasoning parser."""

SUPPORTED_VLLM = ((0, 32), (0, 33))
"""The vLLM releases this plugin supports: from 0.32 up to, not including, 0.33."""

logger = logging.getLogger(__name__)


def register() -> None:
    """vLLM's plugin hook: register the tokenizer mode, renderer and parsers named ``deepseek_recipe``.

    On a vLLM release outside :data:`SUPPORTED_VLLM` nothing is registered (the plugin
    interfaces it implements change between releases) and a warning says so; vLLM itself runs on
    as if the plugin were not installed.
    """
    import vllm

    version = _release(vllm.__version__)
    low, high = SUPPORTED_VLLM
    if not low <= version < high:
        logger.warning(
            "deepseek_recipe: vLLM %s is outside the supported range >=%d.%d,<%d.%d; "
            "the deepseek_recipe tokenizer mode and parsers are not registered",
            vllm.__version__,
            *low,
            *high,
        )
        return

    from vllm.reasoning import ReasoningParserManager
    from vllm.renderers.registry import RENDERER_REGISTRY
    from vllm.tokenizers.registry import TokenizerRegistry
    from vllm.tool_parsers import ToolParserManager

    # The tokenizer is vLLM's plain Hugging Face one (it detokenizes output); the renderer is ours.
    TokenizerRegistry.register(NAME, "vllm.tokenizers.hf", "CachedHfTokenizer")
    RENDERER_REGISTRY.register(NAME, "deepseek_recipe.vllm.renderer", "DeepseekRecipeRenderer")
    ToolParserManager.register_lazy_module(NAME, "deepseek_recipe.vllm.parsers", "DeepseekRecipeToolParser")
    ReasoningParserManager.register_lazy_module(NAME, "deepseek_recipe.vllm.parsers", "DeepseekRecipeReasoningParser")


def _release(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a version string such as ``0.32.0`` or ``0.32.1rc1+cpu``."""
    parts = version.split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)
