"""Which DeepSeek prompt format a vLLM deployment renders (pure: tested without vLLM)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from deepseek_recipe._native import ModelVersion


def model_version(
    served_names: Iterable[str], versions_by_name: Mapping[str, ModelVersion], v41_architecture: bool
) -> ModelVersion:
    """The version of the first served model name this library knows (``DeepSeek-V4-Pro``,
    ``DeepSeek-V4.1-Flash``, …); otherwise V4.1 for a V4.1 architecture and V4 for anything else,
    as vLLM's own DeepSeek tokenizer modes choose."""
    for name in served_names:
        if name in versions_by_name:
            return versions_by_name[name]
    return ModelVersion.DeepseekV41Flash if v41_architecture else ModelVersion.DeepseekV4Pro
