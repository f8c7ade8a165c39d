"""Type stubs for the Rust extension ``deepseek_recipe._native`` (checked by mypy.stubtest)."""

from collections.abc import Callable, Iterator, Sequence
from os import PathLike
from typing import Any, Literal, TypeAlias, final

from typing_extensions import Buffer, Self, disjoint_base

__version__: str
IMAGE_SPECIAL_TOKEN_ID: int

ToolChoice: TypeAlias = Literal["auto", "none", "required"]
ReasoningEffort: TypeAlias = Literal["low", "high", "xhigh", "max"]
ResponseFormat: TypeAlias = Literal["text", "json_object", "json_schema", "regex"]
ImageDetail: TypeAlias = Literal["low", "high", "original", "auto"]
Role: TypeAlias = Literal["system", "user", "assistant", "tool", "latest_reminder"]
ImageSourceKind: TypeAlias = Literal["data_url", "url", "bytes"]
RequestBody: TypeAlias = bytes | str | dict[str, Any]

def json_nesting_exceeds(body: bytes, limit: int) -> bool:
    """Whether a JSON body nests arrays and objects deeper than ``limit`` (strings skipped)."""

def block_hashes(ids: TokenIds | Sequence[int] | Buffer, block_size: int = 128) -> list[int]:
    """One chained 64-bit hash per full block of ``block_size`` ids (the KV-cache blocks).

    ``ids``: a ``TokenIds``, a buffer of unsigned 32-bit ints (``array('I')``) or any ints.
    """

def prefix_hash(ids: TokenIds | Sequence[int] | Buffer, length: int, block_size: int = 128) -> int:
    """The chained hash of the first ``length`` ids (the last block may be partial)."""

@final
class CancelToken:
    """Ours: stops conversions. Inside ``with token:``, a conversion on this thread stops soon
    after ``token.cancel()`` (called from any thread) with the ``ConversionError`` "The request
    was cancelled" (the JSON-schema checks look at the token between patterns)."""

    def __new__(cls) -> Self: ...
    def cancel(self) -> None:
        """Stop the conversions running (and any later one) inside this token's blocks."""
    @property
    def cancelled(self) -> bool:
        """``cancel()`` was called."""
    def __enter__(self) -> Self: ...
    def __exit__(self, *args: object) -> Literal[False]: ...

class ConversionError(Exception):
    """A request that parsed but cannot be served.

    ``status_code`` is the HTTP status (400) and ``body`` the OpenAI-style JSON error body.
    """

    status_code: int
    body: str

class ImageError(Exception):
    """An image could not be fetched or decoded."""

    kind: str
    is_retryable: bool
    #: Ours: the HTTP status a server answers with (400, or 500 for our own failures).
    status_code: int

class CalcResizeError(ValueError):
    """An image size that cannot be fitted to the model's grid."""

TokenizerErrorKind: TypeAlias = Literal["load", "no_tokenizer", "missing_special_token", "invalid_range", "encode"]
StreamErrorKind: TypeAlias = Literal["finished", "closed", "no_tokenizer", "logprob_count", "unknown_token_id"]
HeldKind: TypeAlias = Literal["reasoning", "content", "tool", "arguments"]
ConsumedErrorKind: TypeAlias = Literal["request", "generator", "chunk"]

class TokenizerError(RuntimeError):
    """Ours (the reference raises a plain ``RuntimeError``): a tokenizer that cannot be loaded,
    or a prompt it cannot encode."""

    kind: TokenizerErrorKind

class StreamError(RuntimeError):
    """Ours (the reference raises a plain ``RuntimeError``): a ``StreamProcessor`` call after
    completion or close, or a chunk it cannot take."""

    kind: StreamErrorKind

class ConsumedError(RuntimeError):
    """Ours (the reference raises a plain ``RuntimeError``): a request, chunk generator or
    event used after a call consumed it."""

    kind: ConsumedErrorKind

@final
class SpecialToken:
    """One template token of the DeepSeek V4 family."""

    Bos: SpecialToken
    Eos: SpecialToken
    ThinkingStart: SpecialToken
    ThinkingEnd: SpecialToken
    System: SpecialToken
    User: SpecialToken
    Assistant: SpecialToken
    LatestReminder: SpecialToken
    Dsml: SpecialToken
    Image: SpecialToken
    Ref: SpecialToken
    RefEnd: SpecialToken
    Box: SpecialToken
    BoxEnd: SpecialToken
    Point: SpecialToken
    PointEnd: SpecialToken
    Polygon: SpecialToken
    PolygonEnd: SpecialToken
    def default_str(self) -> str:
        """The spelling in the DeepSeek V4 family vocabulary."""

@final
class SpecialTokens:
    """The spelling of every special token; keywords override the defaults."""

    def __new__(
        cls,
        *,
        bos: str | None = None,
        eos: str | None = None,
        thinking_start: str | None = None,
        thinking_end: str | None = None,
        system: str | None = None,
        user: str | None = None,
        assistant: str | None = None,
        latest_reminder: str | None = None,
        dsml: str | None = None,
        image: str | None = None,
        ref: str | None = None,
        ref_end: str | None = None,
        box: str | None = None,
        box_end: str | None = None,
        point: str | None = None,
        point_end: str | None = None,
        polygon: str | None = None,
        polygon_end: str | None = None,
    ) -> Self: ...
    def token(self, token: SpecialToken) -> str:
        """The spelling of ``token``."""
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, str]]: ...

@final
class ToolCall:
    """A call the assistant made; ``arguments`` is kept exactly as supplied."""

    def __new__(cls, id: str, name: str, arguments: str) -> Self: ...
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...

@final
class ToolDefinition:
    """A tool the model may call. ``parameters`` is stored verbatim when built directly."""

    def __new__(
        cls,
        name: str,
        description: str | None = None,
        parameters: Any = None,
        strict: bool | None = None,
        defer_loading: bool = False,
    ) -> Self: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str | None: ...
    @property
    def parameters(self) -> Any: ...
    @property
    def strict(self) -> bool | None: ...
    @property
    def defer_loading(self) -> bool: ...

@disjoint_base
class ImageSource:
    """Base class of image sources; ``path`` is the request location errors report."""

    @property
    def kind(self) -> ImageSourceKind: ...
    @property
    def detail(self) -> ImageDetail: ...
    @property
    def data_url(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def data(self) -> bytes | None: ...
    @property
    def path(self) -> str: ...

@final
class DataUrlImageSource(ImageSource):
    """An image referenced by a data URL."""

    def __new__(cls, data_url: str, detail: ImageDetail = "high", *, path: str = ...) -> Self: ...

@final
class UrlImageSource(ImageSource):
    """An image referenced by an external URL (never fetched during conversion)."""

    def __new__(cls, url: str, detail: ImageDetail = "high", *, path: str = ...) -> Self: ...

@final
class BytesImageSource(ImageSource):
    """An image supplied as encoded bytes."""

    def __new__(cls, data: bytes, detail: ImageDetail = "high", *, path: str = ...) -> Self: ...

@final
class ImageInfo:
    """A preprocessed image for the inference backend: its encoded bytes and its dimensions."""

    def __new__(cls, data: bytes, width: int, height: int) -> Self: ...
    @property
    def data(self) -> bytes: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...

@final
class MultiModalData:
    """Images in the order their placeholders appear in a prompt."""

    def __new__(cls, images: Sequence[ImageInfo] | None = None) -> Self: ...
    @property
    def images(self) -> list[ImageInfo]: ...
    def is_empty(self) -> bool: ...
    def image_token_adjustment(self) -> int:
        """Image tokens beyond one per placeholder; ``CalcResizeError`` if a fit does not settle."""

@final
class ImageQuota:
    """The image count and source bytes recorded by the completed resolve calls of one request."""

    def __new__(cls) -> Self: ...
    def image_count(self) -> int: ...
    def byte_size(self) -> int: ...

@final
class PreprocessOptions:
    """Options passed to one image preprocessing operation."""

    def __new__(cls, detail: ImageDetail, max_dimension_px: int, low_detail_max_dimension_px: int) -> Self: ...
    def __getnewargs__(self) -> tuple[ImageDetail, int, int]:
        """Ours: pickles as its three arguments."""
    @property
    def detail(self) -> ImageDetail: ...
    @property
    def max_dimension_px(self) -> int: ...
    @property
    def low_detail_max_dimension_px(self) -> int: ...

@final
class OpenCvImagePreprocessor:
    """The image preprocessor (the reference's name): decode, orient, fit, letterbox, WebP."""

    def __new__(cls) -> Self: ...
    def preprocess(self, data: bytes, options: PreprocessOptions) -> ImageInfo: ...

@final
class ReqwestImageFetcher:
    """The image fetcher (the reference's name): only globally routable addresses by default."""

    def __new__(cls) -> Self: ...
    @staticmethod
    def with_max_bytes(max_bytes: int) -> ReqwestImageFetcher: ...
    def with_destination_filter(self, destination_filter: Callable[[str, str], bool]) -> ReqwestImageFetcher: ...
    def with_allowed_networks(self, networks: Sequence[str]) -> ReqwestImageFetcher: ...
    def with_timeouts(self, connect: float, total: float) -> ReqwestImageFetcher: ...
    def with_resolver(self, resolver: Callable[[str, int], Sequence[str]]) -> ReqwestImageFetcher: ...
    def with_concurrency(self, concurrency: int) -> ReqwestImageFetcher: ...
    def fetch(self, url: str) -> bytes: ...

@final
class ImageResolver:
    """An image resolver built from explicit fetching and preprocessing components."""

    def __new__(cls, fetcher: ReqwestImageFetcher, preprocessor: OpenCvImagePreprocessor) -> Self: ...
    def resolve(self, sources: Sequence[ImageSource], quota: ImageQuota) -> MultiModalData: ...
    def with_pixel_budget(self, max_pixels: int) -> ImageResolver:
        """Ours: a resolver that refuses a call whose images hold more than ``max_pixels``
        pixels (read from their headers, before any is decoded): ``ImageError`` kind
        ``TooManyPixels``."""
    @property
    def pixel_budget(self) -> int | None:
        """Ours: the pixel budget of one call (``None``: none, as the reference's resolver)."""

@disjoint_base
class Message:
    """Base class of messages. Properties a role does not use hold ``None``, ``[]`` or ``False``."""

    @property
    def role(self) -> Role: ...
    @property
    def content(self) -> str: ...
    @property
    def reasoning_content(self) -> str | None: ...
    @property
    def tool_calls(self) -> list[ToolCall] | None: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def image_sources(self) -> list[ImageSource]: ...
    @property
    def prefix(self) -> bool: ...

@final
class SystemMessage(Message):
    """A system message; ``tools`` announces tools mid-conversation (rendered by V4.1).

    The first N occurrences of ``image_token`` in ``content`` are the N sources' placeholders.
    """

    def __new__(
        cls,
        content: str,
        image_sources: Sequence[ImageSource] | None = None,
        tools: Sequence[ToolDefinition] | None = None,
        *,
        image_token: str | None = None,
    ) -> Self: ...
    @property
    def tools(self) -> list[ToolDefinition] | None: ...

@final
class UserMessage(Message):
    """A user message; the first N ``image_token`` occurrences are image placeholders."""

    def __new__(
        cls, content: str, image_sources: Sequence[ImageSource] | None = None, *, image_token: str | None = None
    ) -> Self: ...

@final
class AssistantMessage(Message):
    """An assistant turn; ``prefix=True`` marks a continuation the model should extend."""

    def __new__(
        cls,
        content: str,
        reasoning_content: str | None = None,
        tool_calls: Sequence[ToolCall] | None = None,
        prefix: bool = False,
    ) -> Self: ...

@final
class ToolMessage(Message):
    """The result of a tool call."""

    def __new__(
        cls,
        content: str,
        tool_call_id: str | None = None,
        image_sources: Sequence[ImageSource] | None = None,
        *,
        image_token: str | None = None,
    ) -> Self: ...

@final
class LatestReminderMessage(Message):
    """A reminder rendered just before the model's turn."""

    def __new__(cls, content: str) -> Self: ...

@final
class Conversation:
    """A whole conversation plus the settings that shape its prompt."""

    def __new__(
        cls,
        messages: Sequence[Message] | None = None,
        *,
        thinking_mode: bool = True,
        tools: Sequence[ToolDefinition] | None = None,
        tool_choice: str = "auto",
        reasoning_effort: str | None = None,
        response_format: str = "text",
        response_schema: Any = None,
        response_regex: str | None = None,
    ) -> Self: ...
    @property
    def messages(self) -> list[Message]: ...
    @property
    def image_sources(self) -> list[ImageSource]:
        """Ours: every message's image sources in order, without copying the messages."""
    @property
    def thinking_mode(self) -> bool: ...
    @property
    def tools(self) -> list[ToolDefinition]: ...
    @property
    def tool_choice(self) -> ToolChoice: ...
    @property
    def reasoning_effort(self) -> ReasoningEffort | None: ...
    @property
    def response_format(self) -> ResponseFormat: ...
    @property
    def response_schema(self) -> Any: ...
    @property
    def response_regex(self) -> str | None: ...

@final
class RenderedPrompt:
    """A rendered prompt: text, special ranges (code-point offsets) and image sources."""

    @property
    def prompt(self) -> str: ...
    @property
    def special_ranges(self) -> list[tuple[int, int]]:
        """Ascending, disjoint, half-open code-point ranges of template tokens."""
    @property
    def image_sources(self) -> list[ImageSource]: ...
    def encode(self, tokenizer: Tokenizer) -> list[int]:
        """Ours: this prompt's ids without rendering again (what the encoding's ``encode`` gives)."""
    def encode_ids(self, tokenizer: Tokenizer) -> TokenIds:
        """Ours: ``encode``, with the ids held by the core."""

@final
class DeepseekV4Encoding:
    """The DeepSeek V4 (Pro) prompt format."""

    def __new__(cls) -> Self: ...
    def with_tokenizer(self, tokenizer: Tokenizer) -> DeepseekV4Encoding: ...
    def with_special_tokens(self, special_tokens: SpecialTokens) -> DeepseekV4Encoding: ...
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Ours: pickles as the calls that built it (its tokenizer as ``tokenizer.json`` text)."""
    def render_conversation(self, conversation: Conversation) -> RenderedPrompt: ...
    def encode(self, conversation: Conversation) -> list[int]:
        """Token ids: special ranges by added-vocabulary lookup, text with no added-token matching."""
    def encode_ids(self, conversation: Conversation) -> TokenIds:
        """``encode``, with the ids held by the core (no Python int per id until asked)."""
    def encode_ids_timed(self, conversation: Conversation) -> tuple[TokenIds, tuple[float, float]]:
        """Ours: ``encode_ids``, with how long rendering and then encoding took (seconds)."""
    def encode_continuing(
        self, conversation: Conversation, previous: EncodedPrompt | None = None, stored_ids: bytes | None = None
    ) -> EncodedPrompt:
        """Ours: render and encode ``conversation`` as the next turn of ``previous``'s (blocks
        both render alike copied, ids reused up to the last shared special token); without
        ``previous``, ``stored_ids`` (little-endian ``u32``s) are the base. Ids equal
        ``encode_ids``'s."""
    @property
    def model_version(self) -> ModelVersion:
        """Ours: the model version whose prompt format this is."""

@final
class DeepseekV41Encoding:
    """The DeepSeek V4.1 (Flash) prompt format."""

    def __new__(cls) -> Self: ...
    def with_tokenizer(self, tokenizer: Tokenizer) -> DeepseekV41Encoding: ...
    def with_special_tokens(self, special_tokens: SpecialTokens) -> DeepseekV41Encoding: ...
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Ours: pickles as the calls that built it (its tokenizer as ``tokenizer.json`` text)."""
    def render_conversation(self, conversation: Conversation) -> RenderedPrompt: ...
    def encode(self, conversation: Conversation) -> list[int]:
        """Token ids: special ranges by added-vocabulary lookup, text with no added-token matching."""
    def encode_ids(self, conversation: Conversation) -> TokenIds:
        """``encode``, with the ids held by the core (no Python int per id until asked)."""
    def encode_ids_timed(self, conversation: Conversation) -> tuple[TokenIds, tuple[float, float]]:
        """Ours: ``encode_ids``, with how long rendering and then encoding took (seconds)."""
    def encode_continuing(
        self, conversation: Conversation, previous: EncodedPrompt | None = None, stored_ids: bytes | None = None
    ) -> EncodedPrompt:
        """Ours: render and encode ``conversation`` as the next turn of ``previous``'s (blocks
        both render alike copied, ids reused up to the last shared special token); without
        ``previous``, ``stored_ids`` (little-endian ``u32``s) are the base. Ids equal
        ``encode_ids``'s."""
    @property
    def model_version(self) -> ModelVersion:
        """Ours: the model version whose prompt format this is."""

@final
class TokenIds:
    """A prompt's token ids held by the core: a read-only sequence of ints with ``to_json``."""

    def __new__(cls, ids: Sequence[int]) -> Self: ...
    def __reduce__(self) -> tuple[type[TokenIds], tuple[list[int]]]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> int: ...
    def __iter__(self) -> Iterator[int]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def tolist(self) -> list[int]: ...
    def to_json(self) -> bytes:
        """The JSON array of the ids (``[0,1,2]``), without a Python int per id."""
    def unwritten_json(self) -> int:
        """How many ids :meth:`to_json` would write as JSON for the first time (the JSON of an
        encoded prompt's ids is kept, and copied by every later prompt that extends it)."""
    def json_between(self, before: bytes, after: bytes) -> bytes:
        """``before``, :meth:`to_json`'s array and ``after`` as one bytes object (one copy of
        the ids' JSON kept for an encoded prompt)."""
    def unwritten_varints(self) -> int:
        """How many ids :meth:`protobuf_between` would write as varints for the first time
        (kept and reused like the JSON)."""
    def protobuf_between(self, before: bytes, fields: Sequence[int], after: bytes) -> bytes:
        """``before``, the ids as a packed ``repeated uint32`` protobuf field, and ``after`` as
        one bytes object. ``fields`` are field numbers from the outer message in: ``[2, 2]``
        is field 2 (the ids) of the message in field 2 of the message ``before`` and
        ``after`` are serialized fields of. ``ValueError`` for no field or a number outside
        1 to 2^29 - 1."""
    def index(self, value: int, start: int = 0) -> int:
        """The first position of ``value`` at or after ``start`` (``ValueError`` if absent)."""
    def block_hashes(self, block_size: int = 128) -> list[int]:
        """One chained 64-bit hash per full block of ``block_size`` ids, on the ids as held."""
    def prefix_hash(self, length: int, block_size: int = 128) -> int:
        """The chained hash of the first ``length`` ids (the last block may be partial)."""
    def to_bytes(self, start: int = 0) -> bytes:
        """The ids from ``start`` on as little-endian ``u32``s, for storage."""
    @staticmethod
    def from_bytes(data: bytes) -> TokenIds:
        """Ids stored by ``to_bytes`` (``ValueError`` for a length not a multiple of 4)."""
    def common_prefix(self, other: TokenIds) -> int:
        """How many leading ids this and ``other`` share."""

@final
class EncodedPrompt:
    """Ours: one turn's prompt, rendered and encoded, kept so the next turn of the same
    conversation renders and encodes only what it adds (``encode_continuing``)."""

    @property
    def ids(self) -> TokenIds: ...
    @property
    def prompt_bytes(self) -> int: ...
    @property
    def reused_bytes(self) -> int:
        """Leading bytes of the prompt copied from the turn it continued."""
    @property
    def approx_bytes(self) -> int:
        """Roughly the bytes held, for caches."""

@final
class IntakeCache:
    """Ours: the last body of recent Chat Completions and Messages conversations, with its parse
    and encoded prompt, so the next body of a conversation parses only what follows the
    messages both share and renders from the earlier prompt. At most ``max_bytes`` (estimated),
    least recently used first out; bodies nest at most ``max_depth`` deep. Thread-safe."""

    def __new__(cls, max_bytes: int, max_depth: int = ...) -> Self:
        """``max_depth`` defaults to the parser's own limit, 127."""
    def resume(
        self, protocol: str, body: bytes, owner: str
    ) -> tuple[ChatCompletionRequest | MessagesRequest, IntakeTurn] | None:
        """The request parsed from where ``body`` differs from its conversation's last body
        (equal to a cold parse), and the turn to keep; ``None`` when it is to be parsed cold."""
    def start(self, protocol: str, body: bytes, owner: str, request: object) -> IntakeTurn | None:
        """The turn to keep for ``request`` (the ``protocol``'s request class, ``TypeError``
        otherwise), parsed cold from ``body`` (``None`` for a body that does not resume). A
        conversation's first body, or one that did not resume, is kept alone; the next one with
        its parse."""
    @property
    def bytes(self) -> int: ...
    @property
    def min_body_bytes(self) -> int:
        """The smallest body worth resuming: smaller ones are neither resumed nor kept."""
    @property
    def max_bytes(self) -> int: ...
    def __len__(self) -> int: ...

@final
class IntakeTurn:
    """Ours: one body on its way through an ``IntakeCache``."""

    @property
    def previous(self) -> EncodedPrompt | None:
        """The earlier body's prompt, to render this one from."""
    @property
    def reused_messages(self) -> int: ...
    def keep(self, prompt: EncodedPrompt) -> bool:
        """Keep the body and ``prompt`` as the conversation's last (once); whether it was kept."""

@final
class ResponsesHistory:
    """Ours: every item of a stored Responses conversation and the conversion state after them,
    so a request continuing it converts only its own items. Immutable."""

    def __new__(cls) -> Self: ...
    @staticmethod
    def from_json(items: bytes | str) -> ResponsesHistory:
        """A history of a JSON array of items (``ValueError`` for one of the wrong shape)."""
    def extend(self, items: bytes | str) -> ResponsesHistory:
        """This history with ``items`` (a JSON array) after its own."""
    @property
    def approx_bytes(self) -> int: ...
    def __len__(self) -> int: ...

@final
class ResponsesStateFields:
    """Ours: what a stateful server reads from a Responses request (the reference ignores it)."""

    @property
    def store(self) -> bool | None: ...
    @property
    def previous_response_id(self) -> str | None: ...
    @property
    def conversation(self) -> str | None: ...
    @property
    def metadata(self) -> str | None:
        """``metadata`` as JSON text."""
    @property
    def background(self) -> bool | None: ...

@final
class WebSearchBehavior:
    """What to do with web-search server tools: drop them or reject the request."""

    Drop: WebSearchBehavior
    Reject: WebSearchBehavior
    def __reduce__(self) -> tuple[Any, tuple[type[Self], str]]: ...

@final
class ReasoningContentBehavior:
    """What to do with tool-calling history that lacks reasoning in thinking mode."""

    FillEmpty: ReasoningContentBehavior
    Reject: ReasoningContentBehavior
    def __reduce__(self) -> tuple[Any, tuple[type[Self], str]]: ...

@final
class ModelVersion:
    """Which prompt format and rules apply."""

    DeepseekV4Pro: ModelVersion
    DeepseekV41Flash: ModelVersion
    def __reduce__(self) -> tuple[Any, tuple[type[Self], str]]: ...
    @property
    def name(self) -> Literal["DeepseekV4Pro", "DeepseekV41Flash"]:
        """Ours: the member's name, like a Python enum's."""
    def encoding(self) -> DeepseekV4Encoding | DeepseekV41Encoding:
        """Ours: a new encoding of this version's prompt format (no tokenizer, default tokens)."""

@final
class ConversionOptions:
    """The deployment's policy for converting requests. Immutable; ``with_*`` return copies."""

    def __new__(
        cls,
        *,
        default_thinking_mode: bool = True,
        reasoning_content_behavior: ReasoningContentBehavior = ...,
        responses_web_search: WebSearchBehavior = ...,
        messages_web_search: WebSearchBehavior = ...,
        thinking_max_tokens_upper_bound: int = 393216,
        non_thinking_max_tokens_upper_bound: int = 393216,
        special_tokens: SpecialTokens | None = None,
        model_versions_by_name: dict[str, ModelVersion] | None = None,
        max_choices: int = 1,
    ) -> Self: ...
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]: ...
    @property
    def default_thinking_mode(self) -> bool: ...
    @property
    def model_versions_by_name(self) -> dict[str, ModelVersion]: ...
    @property
    def thinking_max_tokens_upper_bound(self) -> int: ...
    @property
    def non_thinking_max_tokens_upper_bound(self) -> int: ...
    @property
    def reasoning_content_behavior(self) -> ReasoningContentBehavior: ...
    @property
    def responses_web_search(self) -> WebSearchBehavior: ...
    @property
    def messages_web_search(self) -> WebSearchBehavior: ...
    @property
    def special_tokens(self) -> SpecialTokens: ...
    @property
    def max_choices(self) -> int:
        """Ours: the most choices a Chat request may ask for (``n``); 1 refuses any other ``n``."""
    def with_max_choices(self, max_choices: int) -> ConversionOptions:
        """Ours: a copy allowing Chat requests up to ``max_choices`` choices."""
    def with_default_thinking_mode(self, default_thinking_mode: bool) -> ConversionOptions: ...
    def with_reasoning_content_behavior(
        self, reasoning_content_behavior: ReasoningContentBehavior
    ) -> ConversionOptions: ...
    def with_responses_web_search(self, responses_web_search: WebSearchBehavior) -> ConversionOptions: ...
    def with_messages_web_search(self, messages_web_search: WebSearchBehavior) -> ConversionOptions: ...
    def with_special_tokens(self, special_tokens: SpecialTokens) -> ConversionOptions: ...
    def with_model_alias(self, model: str, model_version: ModelVersion) -> ConversionOptions:
        """Add a model name, or replace the version of an existing one."""
    def with_model_versions_by_name(self, model_versions_by_name: dict[str, ModelVersion]) -> ConversionOptions:
        """Replace the whole name table (an empty one is allowed)."""
    def with_thinking_max_tokens_upper_bound(self, thinking_max_tokens_upper_bound: int) -> ConversionOptions: ...
    def with_non_thinking_max_tokens_upper_bound(
        self, non_thinking_max_tokens_upper_bound: int
    ) -> ConversionOptions: ...

@final
class OutputConstraint:
    """What a backend should constrain decoding to: ``json``, ``regex``, ``tool_call`` or ``tool_call_required``."""

    @property
    def kind(self) -> str: ...
    @property
    def schema(self) -> str: ...

@final
class InferenceOptions:
    """Sampling and budget settings for the backend."""

    @property
    def max_tokens(self) -> int | None: ...
    @property
    def temperature(self) -> float | None: ...
    @property
    def top_p(self) -> float | None: ...
    @property
    def logprobs(self) -> bool: ...
    @property
    def top_logprobs(self) -> int | None: ...
    @property
    def seed(self) -> int | None: ...
    @property
    def output_constraint(self) -> OutputConstraint | None: ...
    @property
    def n(self) -> int:
        """Ours: how many choices to sample (Chat's ``n``)."""

@final
class ThinkingInitialStage:
    """Where parsing of the model's output starts."""

    ReasoningStart: ThinkingInitialStage
    ReasoningContinuation: ThinkingInitialStage
    ContentContinuation: ThinkingInitialStage
    def __reduce__(self) -> tuple[Any, tuple[type[Self], str]]: ...
    def starts_in_reasoning(self) -> bool: ...

@final
class ParsingOptions:
    """How to parse the model's output. Mutable; not for sharing across threads while changed."""

    parse_tool_calls: bool
    starts_in_tool_calls: bool
    parse_json_output: bool
    thinking_initial_stage: ThinkingInitialStage | None
    def __new__(
        cls,
        *,
        parse_tool_calls: bool = True,
        starts_in_tool_calls: bool = False,
        parse_json_output: bool = False,
        thinking_initial_stage: ThinkingInitialStage | None = None,
        stop_sequences: Sequence[str] | None = None,
        special_tokens: SpecialTokens | None = None,
    ) -> Self: ...
    @property
    def stop_sequences(self) -> list[str]: ...
    @stop_sequences.setter
    def stop_sequences(self, value: Sequence[str]) -> None: ...
    @property
    def special_tokens(self) -> SpecialTokens: ...
    @special_tokens.setter
    def special_tokens(self, value: SpecialTokens) -> None: ...
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]:
        """Ours: pickles as ``ParsingOptions(**every setting)``."""

@final
class ConversationRequest:
    """A converted request: the conversation plus inference and parsing options."""

    def __new__(cls, conversation: Conversation, model_version: ModelVersion) -> Self: ...
    @property
    def conversation(self) -> Conversation: ...
    @property
    def inference_options(self) -> InferenceOptions: ...
    @property
    def parsing_options(self) -> ParsingOptions: ...
    @property
    def model_version(self) -> ModelVersion: ...
    @property
    def stream(self) -> bool: ...
    def resolve_max_tokens(self, prompt_tokens: int, context_limit: int) -> int:
        """The completion budget: a requested max_tokens, else a default lowered to the context left."""

@final
class ChatCompletionRequest:
    """An OpenAI Chat Completions request body; consumed by ``convert``."""

    def __new__(cls, body: RequestBody) -> Self: ...
    @property
    def model(self) -> str: ...
    def convert(self, options: ConversionOptions) -> ConversationRequest: ...
    @staticmethod
    def chunk_generator(request: ConversationRequest, id: str, model: str) -> ChatCompletionChunkGenerator:
        """The Chat Completions generator for ``request`` (thinking mode, usage reporting)."""

@final
class ChatCompletionChunkGenerator:
    """A Chat Completions chunk generator; consumed by a ``StreamProcessor``."""

    def with_choice(self, index: int) -> ChatCompletionChunkGenerator:
        """Ours: consume this generator; it makes choice ``index`` of several (``n``), its usage
        held for ``ChatCompletionResponse.usage_chunk_json``."""

@final
class ChatCompletionChunk:
    """One ``chat.completion.chunk``; consumed by ``ChatCompletionResponse.accumulate``."""

    def to_json(self) -> str: ...

@final
class ChatCompletionResponse:
    """The non-streaming ``chat.completion``, accumulated from chunks."""

    def __new__(cls, id: str, model: str, created: int, prompt_tokens: int, prompt_cache_hit_tokens: int) -> Self: ...
    def accumulate(self, chunk: ChatCompletionChunk) -> None:
        """Apply ``chunk``; it is consumed (using it again raises ``ConsumedError``)."""
    def to_json(self) -> str: ...
    def usage_chunk_json(self) -> str | None:
        """Ours: the chunk ending a stream of several choices (no choices, their usage added)."""
    @staticmethod
    def sse_event_name(chunk: ChatCompletionChunk) -> None:
        """Chat chunks are unnamed SSE ``data:`` events."""
    @staticmethod
    def sse_done_data() -> str:
        """``[DONE]``."""

@final
class PromptUsage:
    """Prompt-side usage from the backend's ``ready`` chunk."""

    def __new__(cls, *, prompt_tokens: int = 0, prompt_cache_hit_tokens: int = 0) -> Self: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def prompt_cache_hit_tokens(self) -> int: ...

@final
class InferenceFinishReason:
    """Why the backend stopped generating."""

    Stop: InferenceFinishReason
    Length: InferenceFinishReason
    ContentFilter: InferenceFinishReason

@final
class InferenceChunk:
    """One chunk from the inference backend: ``ready``, ``text``, ``tokens`` or ``finish``."""

    @staticmethod
    def ready(*, prompt_usage: PromptUsage | None = None, system_fingerprint: str | None = None) -> InferenceChunk: ...
    @staticmethod
    def text(content: str, token_count: int = 0) -> InferenceChunk: ...
    @staticmethod
    def tokens(
        token_ids: Sequence[int],
        logprobs: Sequence[tuple[float, Sequence[tuple[int, float]]]] | None = None,
    ) -> InferenceChunk:
        """Token ids, optionally with one ``(logprob, [(token_id, logprob), ...])`` per id."""
    @staticmethod
    def finish(finish_reason: InferenceFinishReason) -> InferenceChunk: ...
    @property
    def kind(self) -> Literal["ready", "text", "tokens", "finish"]: ...
    @property
    def content(self) -> str | None: ...
    @property
    def token_ids(self) -> list[int] | None: ...
    @property
    def finish_reason(self) -> InferenceFinishReason | None: ...
    @property
    def prompt_usage(self) -> PromptUsage | None: ...
    @property
    def token_count(self) -> int | None:
        """The token count of a ``text`` chunk; ``None`` for the other kinds."""
    @property
    def system_fingerprint(self) -> str | None: ...

@final
class StreamProcessor:
    """Parses one response's output into its protocol's chunks or events.

    Mutable: calls from several threads at once are serialized (each waits for the one
    before it), as the reference does.
    """

    def __new__(
        cls,
        generator: ChatCompletionChunkGenerator | ResponsesChunkGenerator | MessagesChunkGenerator,
        options: ParsingOptions,
        tokenizer: Tokenizer | None = None,
    ) -> Self: ...
    @property
    def finished(self) -> bool:
        """The stream completed (finish chunk, stop sequence or ``finish()``) and is not closed."""
    def push(self, chunk: InferenceChunk) -> list[ChatCompletionChunk | ResponsesStreamEvent | MessagesStreamEvent]:
        """Process one chunk. Raises ``StreamError`` (a ``RuntimeError``) after completion or
        close, and on stream errors (a ``tokens`` chunk without a tokenizer, a logprob count that
        differs from the id count), which close the processor."""
    def finish(self) -> list[ChatCompletionChunk | ResponsesStreamEvent | MessagesStreamEvent]:
        """Flush and complete the stream; ``[]`` once completed."""
    def close(self) -> None:
        """Release the processor without completing the stream."""
    def update_prompt_usage(self, prompt_usage: PromptUsage) -> None:
        """Report ``prompt_usage`` at completion instead of the ``ready`` chunk's (an engine that
        counts cached prompt tokens only at the end); events already produced keep theirs."""
    def check_engine(self, max_tokens: int | None = None) -> None:
        """Ours: check the engine's output from now on (call it before the first chunk): output
        past ``max_tokens`` is cut there and ends the stream with ``length``, a token id outside
        the vocabulary fails it (``StreamError``, kind ``unknown_token_id``), and reasoning
        tokens are the ids that made reasoning text, never more than the completion tokens."""
    def held_back(self) -> list[tuple[HeldKind, str, int | None]]:
        """Ours: what ending the output now would flush, the processor left as it is: one
        ``(kind, text, index)`` per piece of text or tool call held back (``index``: the tool
        call's)."""

@final
class ResponsesRequest:
    """An OpenAI Responses request body; consumed by ``convert``."""

    def __new__(cls, body: RequestBody) -> Self: ...
    @property
    def model(self) -> str: ...
    def convert(self, options: ConversionOptions) -> ConversationRequest: ...
    @staticmethod
    def chunk_generator(request: ConversationRequest, id: str, model: str) -> ResponsesChunkGenerator:
        """The Responses generator for ``request``: it reports the request's own settings."""
    def echo(self) -> ResponsesEcho:
        """The settings response objects report. Raises ``ConsumedError`` after ``convert``."""
    def namespace_tool_map(self, options: ConversionOptions) -> dict[str, tuple[str, str]]:
        """Flattened namespaced function names mapped to ``(namespace, local name)``. Raises
        ``ConversionError`` for an invalid tool declaration, ``ConsumedError`` after ``convert``."""
    def state_fields(self) -> ResponsesStateFields:
        """Ours: ``store``, ``previous_response_id``, ``conversation`` and ``metadata``, checked
        (``ConversionError`` for a wrong type or both of the two ids)."""
    def convert_continuing(
        self, options: ConversionOptions, history: ResponsesHistory
    ) -> tuple[ConversationRequest, ResponsesHistory]:
        """Ours: ``convert`` with ``history``'s items before the request's own; also the history
        after the request's input items. Consumes the request."""

@final
class ResponsesChunkGenerator:
    """A Responses event generator; consumed by a ``StreamProcessor`` or a ``with_*`` call."""

    def with_namespace_tool_map(self, namespace_tool_map: dict[str, tuple[str, str]]) -> ResponsesChunkGenerator:
        """Consume this generator; parsed names found in the map become ``name`` + ``namespace``."""
    def with_echo(self, echo: ResponsesEcho) -> ResponsesChunkGenerator:
        """Consume this generator; response objects report ``echo`` instead."""
    def with_state(
        self,
        store: bool,
        previous_response_id: str | None = None,
        conversation: str | None = None,
        metadata: str | None = None,
        background: bool = False,
    ) -> ResponsesChunkGenerator:
        """Ours: consume this generator; response objects report this storage state."""
    def with_cache_write_tokens(self) -> ResponsesChunkGenerator:
        """Ours: consume this generator; the usage reports ``cache_write_tokens`` (0), as
        today's API does (the reference's usage predates the field)."""

@final
class ResponsesEcho:
    """The request settings a Responses response object reports (defaults: an unspecified request)."""

    def __new__(cls) -> Self: ...
    @property
    def instructions(self) -> str | None: ...
    @property
    def max_output_tokens(self) -> int | None: ...
    @property
    def temperature(self) -> float: ...
    @property
    def top_p(self) -> float: ...
    @property
    def top_logprobs(self) -> int: ...
    @property
    def user(self) -> str | None: ...

@final
class ResponsesStreamEvent:
    """One Responses stream event; consumed by ``ResponsesResponse.accumulate``."""

    def to_json(self) -> str: ...

@final
class ResponsesResponse:
    """The final Responses response object, accumulated from stream events."""

    def __new__(
        cls, id: str, model: str, created_at: int, prompt_tokens: int, prompt_cache_hit_tokens: int
    ) -> Self: ...
    def accumulate(self, chunk: ResponsesStreamEvent) -> None:
        """Apply ``chunk``; it is consumed (using it again raises ``ConsumedError``)."""
    def to_json(self) -> str: ...
    @staticmethod
    def sse_event_name(chunk: ResponsesStreamEvent) -> str:
        """The event's ``type``."""
    @staticmethod
    def sse_done_data() -> None:
        """Responses streams have no terminal data message."""

@final
class MessagesRequest:
    """An Anthropic Messages request body; consumed by ``convert``."""

    def __new__(cls, body: RequestBody) -> Self: ...
    @property
    def model(self) -> str: ...
    def convert(self, options: ConversionOptions) -> ConversationRequest: ...
    @staticmethod
    def chunk_generator(request: ConversationRequest, id: str, model: str) -> MessagesChunkGenerator:
        """The Messages generator for ``request``'s resolved thinking mode."""

@final
class MessagesChunkGenerator:
    """A Messages event generator; consumed by a ``StreamProcessor`` or ``with_signature``."""

    def __new__(cls, id: str, model: str, thinking_mode: bool) -> Self: ...
    def with_signature(self, signature: str) -> MessagesChunkGenerator:
        """Consume this generator; thinking blocks end with ``signature``, not the response ID."""

@final
class MessagesStreamEvent:
    """One Messages stream event; consumed by ``MessagesResponse.accumulate``."""

    def to_json(self) -> str: ...

@final
class MessagesResponse:
    """The non-streaming Messages response, accumulated from stream events."""

    def __new__(cls, id: str, model: str, created: int, prompt_tokens: int, prompt_cache_hit_tokens: int) -> Self: ...
    def accumulate(self, chunk: MessagesStreamEvent) -> None:
        """Apply ``chunk``; it is consumed (using it again raises ``ConsumedError``)."""
    def to_json(self) -> str: ...
    @staticmethod
    def sse_event_name(chunk: MessagesStreamEvent) -> str:
        """The event's ``type``."""
    @staticmethod
    def sse_done_data() -> None:
        """Messages streams have no terminal data message."""

@final
class Tokenizer:
    """A Hugging Face ``tokenizer.json``."""

    @staticmethod
    def from_file(path: str | PathLike[str]) -> Tokenizer:
        """Load a ``tokenizer.json`` (ours: ``path`` may be any ``os.PathLike``)."""
    @staticmethod
    def from_str(text: str) -> Tokenizer: ...
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """Pickles as ``Tokenizer.from_str`` of its ``tokenizer.json`` text."""
    def encode(self, text: str) -> list[int]:
        """Full-vocabulary encode (added tokens matched), no BOS."""
    def encode_ordinary(self, text: str) -> list[int]:
        """Injection-safe encode: spellings of added tokens in ``text`` stay plain text."""
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Ids to text (added tokens written out unless skipped; broken UTF-8 as U+FFFD)."""
    def token_bytes(self, id: int) -> bytes | None:
        """The raw bytes of token ``id``; ``None`` outside the vocabulary."""
