"""The Python API's own promises beyond the reference's names: typed errors with a ``kind``,
``RenderedPrompt.encode``, the encoding chosen by the model version, ``os.PathLike`` paths,
the ``ProtocolRequest`` type and a ``__version__`` of our own."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pickle
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import deepseek_recipe as dr
from deepseek_recipe.batch import PrepareBatch
from tests.conformance import probe

MODEL = "DeepSeek-V4-Pro"
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": MODEL, "input": "hi"}
MESSAGES = {"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
CONVERSATION = dr.Conversation([dr.UserMessage("hi")])

# -- typed errors --------------------------------------------------------------------------------

# Each failure: what raises it, the typed class, its kind, and the message the 0.2.0 wheel gives
# (recorded from the wheel, where every one of them is a plain RuntimeError).
Case = tuple[str, Callable[[dr.Tokenizer], object], type[RuntimeError], str, str]


def _converted(body: dict[str, Any] = CHAT) -> dr.ConversationRequest:
    return dr.ChatCompletionRequest(body).convert(dr.ConversionOptions())


def _consumed_request(
    cls: type[dr.ProtocolRequest], body: dict[str, Any], use: Callable[[Any], object]
) -> Callable[[dr.Tokenizer], object]:
    def run(_: dr.Tokenizer) -> object:
        request = cls(body)
        request.convert(dr.ConversionOptions())
        return use(request)

    return run


def _convert(request: dr.ProtocolRequest) -> object:
    return request.convert(dr.ConversionOptions())


def _processor(tokenizer: dr.Tokenizer | None) -> dr.StreamProcessor:
    converted = _converted()
    generator = dr.ChatCompletionRequest.chunk_generator(converted, "chatcmpl-1", MODEL)
    return dr.StreamProcessor(generator, converted.parsing_options, tokenizer)


def _unknown_id(tokenizer: dr.Tokenizer) -> object:
    processor = _processor(tokenizer)
    processor.check_engine()
    return processor.push(dr.InferenceChunk.tokens([10_000_000]))


def _after_finish(tokenizer: dr.Tokenizer) -> object:
    processor = _processor(tokenizer)
    processor.push(dr.InferenceChunk.ready())
    processor.finish()
    return processor.push(dr.InferenceChunk.text("x"))


def _after_close(tokenizer: dr.Tokenizer) -> object:
    processor = _processor(tokenizer)
    processor.close()
    return processor.push(dr.InferenceChunk.text("x"))


def _generator_twice(tokenizer: dr.Tokenizer) -> object:
    converted = _converted()
    generator = dr.ChatCompletionRequest.chunk_generator(converted, "chatcmpl-1", MODEL)
    dr.StreamProcessor(generator, converted.parsing_options, tokenizer)
    return dr.StreamProcessor(generator, converted.parsing_options, tokenizer)


def _responses_generator_twice(_: dr.Tokenizer) -> object:
    converted = dr.ResponsesRequest(RESPONSES).convert(dr.ConversionOptions())
    generator = dr.ResponsesRequest.chunk_generator(converted, "resp_1", MODEL)
    generator.with_echo(dr.ResponsesEcho())
    return generator.with_namespace_tool_map({})


def _messages_generator_twice(_: dr.Tokenizer) -> object:
    generator = dr.MessagesChunkGenerator("msg_1", MODEL, False)
    generator.with_signature("s")
    return generator.with_signature("s")


_REQUEST_CLASSES: dict[str, type[dr.ProtocolRequest]] = {
    "chat": dr.ChatCompletionRequest,
    "responses": dr.ResponsesRequest,
    "messages": dr.MessagesRequest,
}
_BODIES: dict[str, dict[str, Any]] = {"chat": CHAT, "responses": RESPONSES, "messages": MESSAGES}


def _events(protocol: str, tokenizer: dr.Tokenizer) -> list[Any]:
    cls = _REQUEST_CLASSES[protocol]
    converted = cls(_BODIES[protocol]).convert(dr.ConversionOptions())
    processor = dr.StreamProcessor(cls.chunk_generator(converted, "id-1", MODEL), converted.parsing_options, tokenizer)
    return processor.push(dr.InferenceChunk.ready()) + processor.push(dr.InferenceChunk.text("hello", 1))


_RESPONSE_CLASSES: dict[str, Any] = {
    "chat": dr.ChatCompletionResponse,
    "responses": dr.ResponsesResponse,
    "messages": dr.MessagesResponse,
}


def _chunk_used(protocol: str, use: str) -> Callable[[dr.Tokenizer], object]:
    def run(tokenizer: dr.Tokenizer) -> object:
        events = _events(protocol, tokenizer)
        response = _RESPONSE_CLASSES[protocol]("id-1", MODEL, 0, 1, 0)
        response.accumulate(events[0])
        if use == "accumulate":
            return response.accumulate(events[0])
        if use == "to_json":
            return events[0].to_json()
        return _RESPONSE_CLASSES[protocol].sse_event_name(events[0])

    return run


CONSUMED_REQUEST = "protocol request has been consumed"
CONSUMED_GENERATOR = "chunk generator has been consumed"
CONSUMED_CHUNK = "protocol chunk has been consumed"

ERROR_CASES: list[Case] = [
    (
        "load: missing file",
        lambda _: dr.Tokenizer.from_file("/nonexistent/tokenizer.json"),
        dr.TokenizerError,
        "load",
        "No such file or directory (os error 2)",
    ),
    (
        "load: a directory",
        lambda _: dr.Tokenizer.from_file(Path("/")),
        dr.TokenizerError,
        "load",
        "Is a directory (os error 21)",
    ),
    (
        "load: not JSON",
        lambda _: dr.Tokenizer.from_str("{not json"),
        dr.TokenizerError,
        "load",
        "key must be a string at line 1 column 2",
    ),
    (
        "load: no model",
        lambda _: dr.Tokenizer.from_str("{}"),
        dr.TokenizerError,
        "load",
        "Model missing. at line 1 column 2",
    ),
    (
        "encode without a tokenizer",
        lambda _: dr.DeepseekV4Encoding().encode(CONVERSATION),
        dr.TokenizerError,
        "no_tokenizer",
        "no tokenizer is attached to the encoding",
    ),
    (
        "V4.1 prompt, V4 vocabulary",
        lambda tok: dr.DeepseekV41Encoding().with_tokenizer(tok).encode(CONVERSATION),
        dr.TokenizerError,
        "missing_special_token",
        'failed to encode conversation: special token "<｜System｜>" is not in the added vocabulary',
    ),
    (
        "a spelling outside the vocabulary",
        lambda tok: (
            dr.DeepseekV4Encoding()
            .with_tokenizer(tok)
            .with_special_tokens(dr.SpecialTokens(user="<|nope|>"))
            .encode(CONVERSATION)
        ),
        dr.TokenizerError,
        "missing_special_token",
        'failed to encode conversation: special token "<|nope|>" is not in the added vocabulary',
    ),
    (
        "rendered prompt, V4 vocabulary",
        lambda tok: dr.DeepseekV41Encoding().render_conversation(CONVERSATION).encode(tok),
        dr.TokenizerError,
        "missing_special_token",
        'failed to encode conversation: special token "<｜System｜>" is not in the added vocabulary',
    ),
    ("push after finish", _after_finish, dr.StreamError, "finished", "stream processor has finished"),
    ("push after close", _after_close, dr.StreamError, "closed", "stream processor is closed"),
    (
        "tokens without a tokenizer",
        lambda _: _processor(None).push(dr.InferenceChunk.tokens([1, 2])),
        dr.StreamError,
        "no_tokenizer",
        "token chunk received without a tokenizer",
    ),
    (
        "a logprob per id",
        lambda tok: _processor(tok).push(dr.InferenceChunk.tokens([1, 2], [(0.0, [])])),
        dr.StreamError,
        "logprob_count",
        "invalid log probabilities: 1 log probabilities for 2 token IDs",
    ),
    (
        "an id outside the vocabulary, the engine checked",
        _unknown_id,
        dr.StreamError,
        "unknown_token_id",
        "token id 10000000 is not in the vocabulary",
    ),
    (
        "chat: convert twice",
        _consumed_request(dr.ChatCompletionRequest, CHAT, _convert),
        dr.ConsumedError,
        "request",
        CONSUMED_REQUEST,
    ),
    (
        "chat: model after convert",
        _consumed_request(dr.ChatCompletionRequest, CHAT, lambda r: r.model),
        dr.ConsumedError,
        "request",
        CONSUMED_REQUEST,
    ),
    (
        "responses: convert twice",
        _consumed_request(dr.ResponsesRequest, RESPONSES, _convert),
        dr.ConsumedError,
        "request",
        CONSUMED_REQUEST,
    ),
    (
        "responses: echo after convert",
        _consumed_request(dr.ResponsesRequest, RESPONSES, lambda r: r.echo()),
        dr.ConsumedError,
        "request",
        CONSUMED_REQUEST,
    ),
    (
        "messages: convert twice",
        _consumed_request(dr.MessagesRequest, MESSAGES, _convert),
        dr.ConsumedError,
        "request",
        CONSUMED_REQUEST,
    ),
    ("chat: generator twice", _generator_twice, dr.ConsumedError, "generator", CONSUMED_GENERATOR),
    ("responses: generator twice", _responses_generator_twice, dr.ConsumedError, "generator", CONSUMED_GENERATOR),
    ("messages: generator twice", _messages_generator_twice, dr.ConsumedError, "generator", CONSUMED_GENERATOR),
    *[
        (f"{protocol}: chunk {use}", _chunk_used(protocol, use), dr.ConsumedError, "chunk", CONSUMED_CHUNK)
        for protocol in ("chat", "responses", "messages")
        for use in ("accumulate", "to_json", "sse_event_name")
    ],
]


@pytest.mark.parametrize(("name", "call", "cls", "kind", "message"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_typed_errors(
    tokenizer: dr.Tokenizer,
    name: str,
    call: Callable[[dr.Tokenizer], object],
    cls: type[RuntimeError],
    kind: str,
    message: str,
) -> None:
    with pytest.raises(cls) as caught:
        call(tokenizer)
    error = caught.value
    assert type(error) is cls
    assert getattr(error, "kind", None) == kind
    assert isinstance(error, RuntimeError)  # what the reference raises: old handlers still catch it
    assert str(error) == message


def test_every_kind_of_each_family_is_covered() -> None:
    """The kinds the stub declares are the kinds the cases reach (``invalid_range`` and
    ``encode`` excepted: the renderer never writes bad ranges, and the BPE does not fail)."""
    covered = {(cls.__name__, kind) for _, _, cls, kind, _ in ERROR_CASES}
    stub = (Path(dr._native.__file__).with_name("_native.pyi")).read_text(encoding="utf-8")
    for family in ("TokenizerError", "StreamError", "ConsumedError"):
        declared = re.search(rf"^{family}Kind: TypeAlias = Literal\[(.*)\]$", stub, re.MULTILINE)
        assert declared is not None, family
        kinds = set(re.findall(r'"(\w+)"', declared.group(1)))
        unreachable = {"invalid_range", "encode"} if family == "TokenizerError" else set()
        assert kinds - unreachable == {k for f, k in covered if f == family}, family


def test_typed_errors_are_the_builtins_the_reference_raises() -> None:
    for cls in (dr.TokenizerError, dr.StreamError, dr.ConsumedError):
        assert issubclass(cls, RuntimeError) and not issubclass(cls, dr.ConversionError)
        assert cls.__module__ == dr.ConversionError.__module__
    assert len({dr.TokenizerError, dr.StreamError, dr.ConsumedError}) == 3


def test_other_errors_keep_their_classes() -> None:
    with pytest.raises(ValueError) as caught:
        dr.ChatCompletionRequest(b"{not json")
    assert type(caught.value) is ValueError
    with pytest.raises(TypeError, match="expected a protocol chunk generator"):
        dr.StreamProcessor(object(), dr.ParsingOptions())  # type: ignore[arg-type]


# -- RenderedPrompt.encode -----------------------------------------------------------------------


def _conformance_conversations() -> list[tuple[str, dr.ConversationRequest, dict[str, str] | None]]:
    out = []
    for path in sorted((Path(__file__).parent / "conformance" / "requests").glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))["case"]
        try:
            options = probe.build_options(dr, case.get("options"))  # type: ignore[no-untyped-call]
            request = getattr(dr, probe.request_class(dr, case["protocol"]))(probe.body_arg(case))  # type: ignore[no-untyped-call]
            converted = request.convert(options)
        except (ValueError, TypeError, OverflowError, RuntimeError, dr.ConversionError):
            continue  # the corpus checks these failures; only converted requests matter here
        out.append((path.stem, converted, (case.get("options") or {}).get("special_tokens")))
    return out


def test_rendered_prompt_encodes_like_the_encoding(tokenizer: dr.Tokenizer) -> None:
    """Over every conformance request: ids of the rendered prompt = the encoding's ids."""
    compared = failed = 0
    for case_id, converted, special in _conformance_conversations():
        encoding = converted.model_version.encoding()
        if special is not None:
            encoding = encoding.with_special_tokens(dr.SpecialTokens(**special))
        rendered = encoding.render_conversation(converted.conversation)
        try:
            whole = encoding.with_tokenizer(tokenizer).encode(converted.conversation)
        except dr.TokenizerError as error:
            with pytest.raises(dr.TokenizerError) as again:
                rendered.encode(tokenizer)
            assert (str(again.value), again.value.kind) == (str(error), error.kind), case_id
            with pytest.raises(dr.TokenizerError) as timed_error:
                encoding.with_tokenizer(tokenizer).encode_ids_timed(converted.conversation)
            assert str(timed_error.value) == str(error), case_id
            failed += 1
            continue
        assert rendered.encode(tokenizer) == whole, case_id
        assert rendered.encode_ids(tokenizer).tolist() == whole, case_id
        timed, (render_seconds, encode_seconds) = encoding.with_tokenizer(tokenizer).encode_ids_timed(
            converted.conversation
        )
        assert timed.tolist() == whole and render_seconds > 0 and encode_seconds > 0, case_id
        compared += 1
    assert compared > 400 and failed > 100, (compared, failed)  # V4 prompts, and V4.1 ones it refuses


def test_rendered_prompt_encode_takes_only_a_tokenizer() -> None:
    rendered = dr.DeepseekV4Encoding().render_conversation(CONVERSATION)
    with pytest.raises(TypeError, match="argument 'tokenizer'"):
        rendered.encode("tokenizer.json")  # type: ignore[arg-type]


def test_tokenizer_encode_ordinary_and_decode_are_public(tokenizer: dr.Tokenizer) -> None:
    stub = (Path(dr._native.__file__).with_name("_native.pyi")).read_text(encoding="utf-8")
    assert "def encode_ordinary(self, text: str) -> list[int]:" in stub
    assert "def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:" in stub
    ids = tokenizer.encode_ordinary("<｜User｜>hi")
    assert ids != tokenizer.encode("<｜User｜>hi") and tokenizer.decode(ids) == "<｜User｜>hi"


# -- the encoding of a model version -------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "cls", "name"),
    [
        (dr.ModelVersion.DeepseekV4Pro, dr.DeepseekV4Encoding, "DeepseekV4Pro"),
        (dr.ModelVersion.DeepseekV41Flash, dr.DeepseekV41Encoding, "DeepseekV41Flash"),
    ],
)
def test_model_version_picks_its_encoding(version: dr.ModelVersion, cls: type[object], name: str) -> None:
    encoding = version.encoding()
    assert type(encoding) is cls
    assert encoding.model_version == version and version.name == name
    assert getattr(dr.ModelVersion, version.name) == version
    assert pickle.loads(pickle.dumps(version)) == version
    explicit: Any = cls()
    assert encoding.render_conversation(CONVERSATION).prompt == explicit.render_conversation(CONVERSATION).prompt


def test_every_model_version_has_an_encoding() -> None:
    versions = {v for v in vars(dr.ModelVersion).values() if isinstance(v, dr.ModelVersion)}
    assert versions == set(dr.ConversionOptions().model_versions_by_name.values())
    assert {type(v.encoding()) for v in versions} == {dr.DeepseekV4Encoding, dr.DeepseekV41Encoding}


def test_no_python_module_picks_an_encoding_by_hand() -> None:
    package = Path(dr.__file__).parent
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for spelled in ("DeepseekV4Encoding()", "DeepseekV41Encoding()", '"DeepseekV4Pro"', '"DeepseekV41Flash"'):
            assert spelled not in text, (path.name, spelled)


def test_cli_renders_with_the_request_s_encoding() -> None:
    body = {"model": "DeepSeek-V4.1-Flash", "messages": [{"role": "user", "content": "hi"}]}
    out = subprocess.run(
        [sys.executable, "-m", "deepseek_recipe", "render", "-"],
        input=json.dumps(body),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    conversation = _converted(body).conversation
    v41 = dr.DeepseekV41Encoding().render_conversation(conversation).prompt
    assert v41 != dr.DeepseekV4Encoding().render_conversation(conversation).prompt
    assert out.stdout.replace("[[", "").replace("]]", "") == v41 + "\n"


# -- paths ---------------------------------------------------------------------------------------


class _PathLike:
    """An ``os.PathLike`` that is not a ``pathlib.Path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path


def test_tokenizer_from_file_takes_path_like(tokenizer: dr.Tokenizer) -> None:
    path = dr.default_tokenizer_path()
    for given in (path, str(path), _PathLike(str(path))):
        loaded = dr.Tokenizer.from_file(given)
        assert loaded.encode("Hello <｜User｜>") == tokenizer.encode("Hello <｜User｜>")
    assert isinstance(_PathLike(""), os.PathLike)


def test_prepare_batch_takes_a_tokenizer_path() -> None:
    stage = PrepareBatch(tokenizer=dr.default_tokenizer_path())
    out = stage({"body": [json.dumps(CHAT)]})
    assert out["error"] == [None] and out["prompt_tokens"][0] > 0
    assert pickle.loads(pickle.dumps(stage)).frontend.tokenizer.encode("x") == stage.frontend.tokenizer.encode("x")


# -- ProtocolRequest -----------------------------------------------------------------------------

# Checked by mypy (strict, tests included): each request class is a ProtocolRequest.
REQUEST_TYPES: tuple[type[dr.ProtocolRequest], ...] = (
    dr.ChatCompletionRequest,
    dr.ResponsesRequest,
    dr.MessagesRequest,
)


def _model_of(request: dr.ProtocolRequest) -> str:
    return request.model


@pytest.mark.parametrize(("cls", "body"), list(zip(REQUEST_TYPES, (CHAT, RESPONSES, MESSAGES))))
def test_request_classes_are_protocol_requests(cls: type[dr.ProtocolRequest], body: dict[str, Any]) -> None:
    request = cls(body)
    assert isinstance(request, dr.ProtocolRequest)
    assert _model_of(request) == MODEL
    converted = request.convert(dr.ConversionOptions())
    assert cls.chunk_generator(converted, "id-1", MODEL) is not None


def test_other_classes_are_not_protocol_requests() -> None:
    assert not isinstance(_converted(), dr.ProtocolRequest)
    assert not isinstance(dr.ConversionOptions(), dr.ProtocolRequest)


def test_mypy_checks_the_protocol(tmp_path: Path) -> None:
    """The type is a real constraint: mypy accepts the request classes and refuses another."""
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "import deepseek_recipe as dr\n"
        "ok: type[dr.ProtocolRequest] = dr.ResponsesRequest\n"
        "bad: type[dr.ProtocolRequest] = dr.ConversationRequest\n",
        encoding="utf-8",
    )
    stdout, _, status = api.run(
        [
            "--config-file",
            os.devnull,
            "--strict",
            "--no-incremental",
            "--cache-dir",
            os.devnull,
            "--follow-imports",
            "silent",
            str(snippet),
        ]
    )
    assert status == 1, stdout
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "snippet.py:3:" in errors[0], stdout


# -- __version__ ---------------------------------------------------------------------------------


def test_version_tells_this_package_apart_from_the_reference() -> None:
    assert dr.__version__ == importlib.metadata.version("deepseek-recipe-rs")
    assert dr.__version__ != "0.2.0"  # the reference's
    # A PEP 440 public version (a local "+label" cannot be uploaded to PyPI): this project's own.
    assert re.fullmatch(r"\d+\.\d+\.\d+", dr.__version__), dr.__version__
    # The changelog's newest entry is this version, and it names the reference release.
    root = Path(__file__).resolve().parents[1]
    newest = re.search(r"^## (\S+)", (root / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert newest is not None and newest.group(1) == dr.__version__
    assert re.search(r'^\[workspace\.metadata\.reference\]\ndeepseek-recipe = "0\.2\.0"$', _cargo_metadata(root), re.M)


def test_the_installed_package_declares_its_license_and_ships_its_texts() -> None:
    meta = importlib.metadata.metadata("deepseek-recipe-rs")
    assert meta["License-Expression"] == "MIT OR Apache-2.0"
    assert sorted(meta.get_all("License-File") or []) == ["LICENSE", "LICENSE-APACHE", "LICENSE-MIT"]
    files = importlib.metadata.files("deepseek-recipe-rs") or []
    shipped = {f.name: f for f in files if f.name.startswith("LICENSE")}
    assert set(shipped) == {"LICENSE", "LICENSE-APACHE", "LICENSE-MIT"}
    assert "Apache License" in shipped["LICENSE-APACHE"].read_text(encoding="utf-8")
    assert "MIT License" in shipped["LICENSE-MIT"].read_text(encoding="utf-8")


def _cargo_metadata(root: Path) -> str:
    """The workspace's ``Cargo.toml`` with its comment lines left out."""
    lines = (root / "Cargo.toml").read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.startswith("#"))


def test_the_doc_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Every Python example in docs/python-api.md runs, printing what its comments say."""
    doc = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(doc), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    promised = [m for block in blocks for m in re.findall(r"^\s*print\(.*\)  # (.*)$", block, flags=re.MULTILINE)]
    assert printed == promised
