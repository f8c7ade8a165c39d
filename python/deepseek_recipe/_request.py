"""``ProtocolRequest``: what the three request classes share, as one type.

``ChatCompletionRequest``, ``ResponsesRequest`` and ``MessagesRequest`` are separate classes
(as in the reference); code that handles a request of any protocol takes a
``ProtocolRequest`` (or a ``type[ProtocolRequest]``) instead of a union of the three.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from deepseek_recipe._native import (
    ChatCompletionChunkGenerator,
    ConversationRequest,
    ConversionOptions,
    MessagesChunkGenerator,
    ResponsesChunkGenerator,
)

if TYPE_CHECKING:
    from deepseek_recipe._native import RequestBody

ChunkGenerator: TypeAlias = ChatCompletionChunkGenerator | ResponsesChunkGenerator | MessagesChunkGenerator
"""The chunk generator of any protocol (what a ``StreamProcessor`` takes)."""


@runtime_checkable
class ProtocolRequest(Protocol):
    """A request body of one protocol, shape-checked; consumed by :meth:`convert`."""

    def __init__(self, body: RequestBody) -> None:
        """Parse and shape-check ``body`` (``ValueError`` with the protocol's message)."""

    @property
    def model(self) -> str:
        """The requested model name (``ConsumedError`` after :meth:`convert`)."""

    def convert(self, options: ConversionOptions) -> ConversationRequest:
        """Convert into a ``ConversationRequest`` (``ConversionError`` when it cannot be
        served); consumes the request either way."""

    @staticmethod
    def chunk_generator(request: ConversationRequest, id: str, model: str) -> ChunkGenerator:
        """This protocol's chunk generator for the converted ``request``."""
