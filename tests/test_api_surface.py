"""The public surface: ``__all__``, the hand-written stub and the 0.2.0-compatible names agree."""

from __future__ import annotations

import ast
from pathlib import Path

import deepseek_recipe
from deepseek_recipe import _native

# ``deepseek_recipe.__all__`` of the public deepseek-recipe 0.2.0 (recorded from the wheel).
REFERENCE_ALL = {
    "IMAGE_SPECIAL_TOKEN_ID",
    "AssistantMessage",
    "BytesImageSource",
    "CalcResizeError",
    "ChatCompletionChunk",
    "ChatCompletionChunkGenerator",
    "ChatCompletionRequest",
    "ChatCompletionResponse",
    "Conversation",
    "ConversationRequest",
    "ConversionError",
    "ConversionOptions",
    "DataUrlImageSource",
    "DeepseekV41Encoding",
    "DeepseekV4Encoding",
    "ImageError",
    "ImageInfo",
    "ImageQuota",
    "ImageResolver",
    "ImageSource",
    "InferenceChunk",
    "InferenceFinishReason",
    "InferenceOptions",
    "LatestReminderMessage",
    "Message",
    "MessagesChunkGenerator",
    "MessagesRequest",
    "MessagesResponse",
    "MessagesStreamEvent",
    "ModelVersion",
    "MultiModalData",
    "OpenCvImagePreprocessor",
    "OutputConstraint",
    "ParsingOptions",
    "PreprocessOptions",
    "PromptUsage",
    "ReasoningContentBehavior",
    "RenderedPrompt",
    "ReqwestImageFetcher",
    "ResponsesChunkGenerator",
    "ResponsesEcho",
    "ResponsesRequest",
    "ResponsesResponse",
    "ResponsesStreamEvent",
    "SpecialToken",
    "SpecialTokens",
    "StreamProcessor",
    "SystemMessage",
    "ThinkingInitialStage",
    "Tokenizer",
    "ToolCall",
    "ToolDefinition",
    "ToolMessage",
    "UrlImageSource",
    "UserMessage",
    "WebSearchBehavior",
    "__version__",
}

# Compatible names not provided yet, each with the capability that brings it.
NOT_YET: set[str] = set()

# Our own additions to the surface.
OURS = {
    "default_tokenizer",
    "default_tokenizer_path",
    "Frontend",
    "PreparedRequest",
    "Decoder",
    "Sampling",
    "block_hashes",
    "prefix_hash",
    # Stopping a conversion whose caller gave up on it.
    "CancelToken",
    # Typed errors: subclasses of the builtin the reference raises, each with a `kind`.
    "TokenizerError",
    "StreamError",
    "ConsumedError",
    # What the three request classes share, as one type.
    "ProtocolRequest",
}


def _stub_names() -> set[str]:
    stub = Path(_native.__file__).with_name("_native.pyi")
    if not stub.exists():  # an editable install keeps the stub beside the sources
        stub = Path(deepseek_recipe.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_all_is_the_compatible_surface_plus_ours() -> None:
    assert set(deepseek_recipe.__all__) == (REFERENCE_ALL - NOT_YET) | OURS


def test_every_exported_name_exists() -> None:
    for name in deepseek_recipe.__all__:
        assert hasattr(deepseek_recipe, name), name


def test_stub_declares_every_native_export() -> None:
    native = {n for n in dir(_native) if not n.startswith("_") or n == "__version__"}
    stub = _stub_names()
    assert native - stub == set()
    assert (set(deepseek_recipe.__all__) - OURS) <= stub


def test_stub_and_py_typed_are_installed() -> None:
    package = Path(deepseek_recipe.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_native.pyi").exists()


def test_modules_the_native_core_calls_import_nothing_of_it() -> None:
    """``_native`` imports ``_fetch`` when it downloads; ``_fetch`` gets the rules it applies
    with each call's settings, so the two never import each other."""
    source = Path(deepseek_recipe.__file__).with_name("_fetch.py").read_text(encoding="utf-8")
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    assert "httpx" in imported  # the walk sees the module's imports
    assert not {name for name in imported if "_native" in name}, imported
