"""The visualizer's JSON API and files, served by a real gateway on loopback.

What the page shows is checked against the library itself: the ids are ``Frontend.prepare``'s,
the special ranges ``render_conversation``'s, the client errors the gateway's own answers to the
same bodies, the shared blocks the demo engine's own prefix cache.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

import deepseek_recipe as dr
from deepseek_recipe.backends.demo import DemoEngine
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import Gateway, GatewaySettings, create_app
from deepseek_recipe.gateway.inspector import MAX_OUTPUT_CHARS, MAX_OUTPUT_IDS, MAX_REPLAY_STEPS, Inspector
from tests.gateway_support import ServerThread, serving
from tests.growth import assert_linear_growth

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES: dict[str, Any] = json.loads((ROOT / "webui" / "examples.json").read_text(encoding="utf-8"))
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
JSON = {"content-type": "application/json"}


def example(name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in EXAMPLES["examples"] if e["id"] == name)
    return found


def cache_example(name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in EXAMPLES["cache"] if e["id"] == name)
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with serving(create_app(GatewaySettings(log_requests=False))) as running:
        yield running


@pytest.fixture(scope="session")
def frontend(tokenizer: dr.Tokenizer) -> Frontend:
    return Frontend(tokenizer)


def call(server: ServerThread, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{server.url}/webui/api/{name}", json=payload, timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def render(server: ServerThread, protocol: str, body: dict[str, Any] | str) -> dict[str, Any]:
    return call(server, "render", {"protocol": protocol, "body": body if isinstance(body, str) else json.dumps(body)})


# -- render ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["plain", "reasoning", "tools", "json", "injection-user", "injection-tool"])
def test_render_is_the_library_exactly(server: ServerThread, frontend: Frontend, name: str) -> None:
    for protocol, body in example(name)["requests"].items():
        answer = render(server, protocol, body)
        prepared = frontend.prepare(protocol, json.dumps(body))
        rendered = frontend.encoding(prepared.model_version).render_conversation(prepared.request.conversation)
        assert answer["client_error"] is None
        assert answer["token_ids"] == prepared.prompt_ids
        assert answer["prompt"] == rendered.prompt
        assert [tuple(r) for r in answer["special_ranges"]] == rendered.special_ranges
        # The token boundaries spell the prompt, and the special tokens are the special ranges.
        tokenizer = frontend.tokenizer
        assert answer["token_lengths"] == [len(tokenizer.token_bytes(i) or b"") for i in prepared.prompt_ids]
        specials = [tokenizer.decode([prepared.prompt_ids[i]]) for i in answer["special_tokens"]]
        assert specials == [rendered.prompt[a:b] for a, b in rendered.special_ranges]
        counts = answer["counts"]
        assert counts["tokens"] == len(prepared.prompt_ids)
        assert counts["special_tokens"] == len(rendered.special_ranges)
        assert answer["request"]["inference"]["resolved_max_tokens"] == prepared.sampling.max_tokens


def test_typed_special_tokens_are_plain_text_marked_as_lookalikes(server: ServerThread, frontend: Frontend) -> None:
    body = example("injection-user")["requests"]["chat"]
    typed = body["messages"][-1]["content"]
    answer = render(server, "chat", body)
    prompt = answer["prompt"]
    start = prompt.index(typed)
    end = start + len(typed)
    # No template token inside the user's text ...
    assert all(b <= start or a >= end for a, b in answer["special_ranges"])
    # ... every spelling the user typed is marked as a look-alike ...
    lookalikes = [prompt[a:b] for a, b in answer["lookalike_ranges"]]
    assert lookalikes == ["<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"]
    assert all(start <= a and b <= end for a, b in answer["lookalike_ranges"])
    # ... and encoded as ordinary tokens: between the real <｜User｜> and <｜Assistant｜>, the ids
    # are the injection-safe encoding of the typed text, not what a naive encoder makes of it.
    user_at, assistant_at = answer["special_tokens"][-3:-1]
    assert answer["token_ids"][user_at + 1 : assistant_at] == frontend.tokenizer.encode_ordinary(typed)
    assert frontend.tokenizer.encode_ordinary(typed) != frontend.tokenizer.encode(typed)


def test_injection_in_a_tool_result_stays_text(server: ServerThread) -> None:
    answer = render(server, "responses", example("injection-tool")["requests"]["responses"])
    prompt = answer["prompt"]
    result = example("injection-tool")["requests"]["chat"]["messages"][3]["content"]
    start = prompt.index(result)
    assert all(b <= start or a >= start + len(result) for a, b in answer["special_ranges"])
    lookalikes = [prompt[a:b] for a, b in answer["lookalike_ranges"]]
    assert lookalikes == ["<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "</think>", "｜DSML｜", "｜DSML｜"]
    assert all(start <= a and b <= start + len(result) for a, b in answer["lookalike_ranges"])


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_v41_renders_and_reports_the_clients_error(server: ServerThread, protocol: str) -> None:
    body = example("image")["requests"][protocol]
    answer = render(server, protocol, body)
    direct = httpx.post(server.url + PATHS[protocol], json=body, timeout=30)
    assert answer["client_error"] == {"status": direct.status_code, "body": direct.json()}
    assert direct.status_code == 400
    assert answer["token_ids"] is None and answer["model_version"] == "V4.1"
    assert "<｜image｜>" in [answer["prompt"][a:b] for a, b in answer["special_ranges"]]
    assert answer["encode_error"] is not None and "<｜System｜>" in answer["encode_error"]


@pytest.mark.parametrize(
    "body",
    ['{"model": ', '{"model": "DeepSeek-V4-Pro"}', '{"model": "nope", "messages": [{"role": "user", "content": "x"}]}'],
)
def test_a_refused_request_shows_the_gateways_own_answer(server: ServerThread, body: str) -> None:
    answer = render(server, "chat", body)
    direct = httpx.post(server.url + "/v1/chat/completions", content=body.encode(), headers=JSON, timeout=30)
    assert answer["client_error"] == {"status": direct.status_code, "body": direct.json()}
    assert answer["prompt"] is None and answer["counts"] is None


def test_every_example_means_the_same_in_every_protocol(server: ServerThread) -> None:
    for entry in EXAMPLES["examples"]:
        bodies = {p: json.dumps(b) for p, b in entry["requests"].items()}
        answer = call(server, "compare", {"bodies": bodies})
        if entry["id"] == "image":
            assert not answer["identical"] and answer["first_difference"] is None
            assert {r["client_error"]["status"] for r in answer["results"].values()} == {400}
        else:
            assert answer["identical"], entry["id"]


def test_compare_names_the_first_difference(server: ServerThread, frontend: Frontend) -> None:
    requests = example("tools")["requests"]
    changed = json.loads(json.dumps(requests["messages"]))
    changed["system"] = changed["system"].replace("2025-06-01", "2025-06-02")
    answer = call(
        server, "compare", {"bodies": {"chat": json.dumps(requests["chat"]), "messages": json.dumps(changed)}}
    )
    a = frontend.prepare("chat", json.dumps(requests["chat"])).prompt_ids
    b = frontend.prepare("messages", json.dumps(changed)).prompt_ids
    index = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
    assert not answer["identical"]
    assert answer["first_difference"] == {"index": index, "ids": {"chat": a[index], "messages": b[index]}}


# -- tokenize, detokenize ----------------------------------------------------------------------


def test_tokenize_safe_or_with_added_tokens_and_back(server: ServerThread, tokenizer: dr.Tokenizer) -> None:
    text = "Hi <｜User｜> é😀"
    safe = call(server, "tokenize", {"text": text})
    full = call(server, "tokenize", {"text": text, "added_tokens": True})
    assert safe["ids"] == tokenizer.encode_ordinary(text)
    assert full["ids"] == tokenizer.encode(text)
    assert safe["ids"] != full["ids"]
    for answer in (safe, full):
        assert sum(answer["token_lengths"]) == len(text.encode())
        back = call(server, "detokenize", {"ids": answer["ids"]})
        assert back == {"text": text, "token_lengths": answer["token_lengths"]}


# -- decode ------------------------------------------------------------------------------------


def texts(protocol: str, events: list[dict[str, Any]]) -> str:
    """Reasoning, content and argument text the events carry, in order (as the page reads them)."""
    out = []
    for event in events:
        data = event["data"]
        if protocol == "chat":
            for choice in data["choices"]:
                delta = choice["delta"]
                out += [delta.get("reasoning_content") or "", delta.get("content") or ""]
                out += [c["function"].get("arguments") or "" for c in delta.get("tool_calls") or []]
        elif protocol == "messages" and data["type"] == "content_block_delta":
            delta = data["delta"]
            out.append(delta.get("thinking") or delta.get("text") or delta.get("partial_json") or "")
        elif protocol == "responses" and data["type"].endswith(".delta"):
            out.append(data["delta"])
    return "".join(out)


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
@pytest.mark.parametrize("size", [1, 3, 1000])
def test_decode_a_tool_call_chunk_by_chunk(server: ServerThread, protocol: str, size: int) -> None:
    entry = example("tools")
    answer = call(
        server,
        "decode",
        {
            "protocol": protocol,
            "body": json.dumps(entry["requests"][protocol]),
            "output": entry["output"],
            "chunk_size": size,
        },
    )
    output = entry["output"]["text"]
    assert answer["client_error"] is None and answer["chunk_size"] == size
    assert "".join(step["text"] for step in answer["steps"]) == output
    assert len(answer["steps"]) == -(-len(output) // size)
    response = answer["response"]
    if protocol == "chat":
        call_ = response["choices"][0]["message"]["tool_calls"][0]["function"]
        name, arguments = call_["name"], json.loads(call_["arguments"])
    elif protocol == "responses":
        item = next(i for i in response["output"] if i["type"] == "function_call")
        name, arguments = item["name"], json.loads(item["arguments"])
    else:
        block = next(b for b in response["content"] if b["type"] == "tool_use")
        name, arguments = block["name"], block["input"]
    assert (name, arguments) == ("get_weather", {"city": "Berlin", "unit": "celsius"})
    # What each step emitted plus what it held back is what the output would give if it ended
    # there; at the end nothing is held, and the stream's text is the response's.
    streamed = ""
    for step in answer["steps"]:
        streamed += texts(protocol, step["events"])
    assert answer["steps"][-1]["held"] == []
    assert streamed == "Berlin needs one more get_weather call." + json.dumps(arguments)
    if size == 1:
        # Right after "</th", the decoder holds it back: it may be the end of the reasoning.
        cut = output.index("</think>") + len("</th")
        held = answer["steps"][cut - 1]["held"]
        assert held == [{"kind": "reasoning", "text": "</th", "index": None}]
        assert answer["steps"][cut - 1]["held_omitted"] == 0
        assert "</th" not in texts(protocol, [e for s in answer["steps"][:cut] for e in s["events"]])


def test_decode_token_ids_and_the_sse_the_client_gets(server: ServerThread, tokenizer: dr.Tokenizer) -> None:
    entry = example("plain")
    ids = tokenizer.encode(entry["output"]["text"])
    answer = call(
        server, "decode", {"protocol": "chat", "body": json.dumps(entry["requests"]["chat"]), "output": {"ids": ids}}
    )
    assert [i for step in answer["steps"] for i in step["ids"]] == ids
    assert answer["output_token_lengths"] == [len(tokenizer.token_bytes(i) or b"") for i in ids]
    sse = answer["start"]["sse"] + "".join(s["sse"] for s in answer["steps"]) + answer["end"]["sse"]
    assert sse.endswith("data: [DONE]\n\n")
    message = answer["response"]["choices"][0]["message"]
    assert message["content"] == "The capital of France is **Paris**."
    assert answer["response"]["usage"]["completion_tokens"] == len(ids)


def test_decode_stops_at_a_stop_sequence_and_caps_the_replay(server: ServerThread) -> None:
    body = {
        "model": "DeepSeek-V4-Pro",
        "messages": [{"role": "user", "content": "Count"}],
        "stop": ["7"],
        "thinking": {"type": "disabled"},
    }
    answer = call(
        server, "decode", {"protocol": "chat", "body": json.dumps(body), "output": {"text": "1 2 3 4 5 6 7 8 9"}}
    )
    assert answer["stopped_at"] == len("1 2 3 4 5 6 ")
    assert answer["response"]["choices"][0]["message"]["content"] == "1 2 3 4 5 6 "
    long = call(
        server,
        "decode",
        {"protocol": "chat", "body": json.dumps(body), "output": {"text": "x" * (3 * MAX_REPLAY_STEPS + 1)}},
    )
    assert long["chunk_size"] == 4 and len(long["steps"]) <= MAX_REPLAY_STEPS


def decode_cost(gateway: Gateway, protocol: str) -> Callable[[int], float]:
    """The CPU time of decoding ``n`` characters of output one character at a time."""
    inspector = Inspector(gateway.intake)
    body = json.dumps(example("plain")["requests"][protocol])

    def cost(n: int) -> float:
        call = {"protocol": protocol, "body": body, "output": {"text": "th " * (n // 3)}, "chunk_size": 1}
        start = time.process_time()
        orjson.dumps(inspector.decode(call))
        return time.process_time() - start

    return cost


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_decode_replays_in_time_linear_in_the_output(frontend: Frontend, protocol: str) -> None:
    """Each step costs its chunk: before, every step replayed every earlier chunk through a
    fresh decoder and listed the closing events, whole response included."""
    gateway = Gateway(
        settings=GatewaySettings(log_requests=False), frontend=frontend, backend=DemoEngine(frontend.tokenizer)
    )
    assert_linear_growth(decode_cost(gateway, protocol), 240)


def test_decode_answers_stay_a_small_multiple_of_the_output(server: ServerThread) -> None:
    """The attacker's request (``th`` repeated, one character a chunk, Responses), smaller:
    the answer is a few times the output, not a copy of the response per step."""
    output = "th " * 70_000
    body = {"model": "DeepSeek-V4-Pro", "input": "hi"}
    payload = {"protocol": "responses", "body": body, "output": {"text": output}, "chunk_size": 1}
    response = httpx.post(f"{server.url}/webui/api/decode", json=payload, timeout=120)
    assert response.status_code == 200
    assert len(response.content) <= 20 * len(output), len(response.content)
    answer = response.json()
    # The request's own max_output_tokens ends the replay before the output does, as it would
    # end an engine's output through the gateway.
    assert 0 < len(answer["steps"]) <= MAX_REPLAY_STEPS


def test_the_page_api_has_limits_of_its_own() -> None:
    settings = GatewaySettings(log_requests=False, webui_max_body_bytes=4096, max_body_bytes=1 << 20)
    with serving(create_app(settings)) as server:
        api = server.url + "/webui/api/"
        big = {"protocol": "chat", "body": "x" * 8192}
        refused = httpx.post(api + "render", json=big)
        assert refused.status_code == 413 and refused.json()["error"]["code"] == "request_too_large"
        chat = {"model": "DeepSeek-V4-Pro", "messages": [{"role": "user", "content": "x" * 8192}]}
        assert httpx.post(server.url + PATHS["chat"], json=chat).status_code == 200  # the APIs' own limit
    with serving(create_app(GatewaySettings(log_requests=False))) as server:
        body = json.dumps(example("plain")["requests"]["chat"])
        for output, message in [
            ({"text": "x" * (MAX_OUTPUT_CHARS + 1)}, f"`output.text` is longer than {MAX_OUTPUT_CHARS} characters"),
            ({"ids": [1] * (MAX_OUTPUT_IDS + 1)}, f"`output.ids` holds more than {MAX_OUTPUT_IDS} ids"),
        ]:
            response = httpx.post(
                server.url + "/webui/api/decode", json={"protocol": "chat", "body": body, "output": output}, timeout=60
            )
            assert response.status_code == 400 and response.json()["error"]["message"] == message


def test_decode_of_a_refused_request_is_the_clients_error(server: ServerThread) -> None:
    body = example("image")["requests"]["chat"]
    answer = call(server, "decode", {"protocol": "chat", "body": json.dumps(body), "output": {"text": "x"}})
    assert answer["client_error"]["status"] == 400 and "steps" not in answer


# -- blocks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["next-turn", "system-changed", "tools-reordered"])
@pytest.mark.parametrize("size", [128, 16])
def test_blocks_match_the_library_ids(server: ServerThread, frontend: Frontend, name: str, size: int) -> None:
    entry = cache_example(name)
    answer = call(
        server,
        "blocks",
        {
            "protocol": "chat",
            "a": json.dumps(entry["a"]["chat"]),
            "b": json.dumps(entry["b"]["chat"]),
            "block_size": size,
        },
    )
    a = frontend.prepare("chat", json.dumps(entry["a"]["chat"])).prompt_ids
    b = frontend.prepare("chat", json.dumps(entry["b"]["chat"])).prompt_ids
    common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    assert answer["common_prefix"] == common
    assert answer["shared_blocks"] == common // size
    assert answer["full_blocks"] == {"a": len(a) // size, "b": len(b) // size}
    hashes = answer["block_hashes"]
    shared = sum(1 for x, y in zip(hashes["a"], hashes["b"]) if x == y)
    assert shared == answer["shared_blocks"]
    assert answer["first_divergence"]["index"] == common


def test_shared_blocks_are_what_the_engine_reuses(frontend: Frontend) -> None:
    """The demo engine keeps a prefix cache of 128-token blocks: after request A, request B hits
    exactly the shared blocks the page reports."""
    for entry in EXAMPLES["cache"]:
        # A fresh gateway (and engine cache) per pair.
        with serving(create_app(GatewaySettings(log_requests=False))) as server:
            answer = call(
                server,
                "blocks",
                {
                    "protocol": "messages",
                    "a": json.dumps(entry["a"]["messages"]),
                    "b": json.dumps(entry["b"]["messages"]),
                },
            )
            first = httpx.post(server.url + "/v1/messages", json=entry["a"]["messages"], timeout=30)
            second = httpx.post(server.url + "/v1/messages", json=entry["b"]["messages"], timeout=30)
            assert first.status_code == second.status_code == 200
            assert first.json()["usage"]["cache_read_input_tokens"] == 0
            assert second.json()["usage"]["cache_read_input_tokens"] == answer["shared_blocks"] * 128, entry["id"]


# -- the API's own errors, limits and auth -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "payload", "message"),
    [
        ("render", {"protocol": "grpc", "body": "{}"}, "`protocol`"),
        ("render", {"protocol": "chat"}, "`body`"),
        ("tokenize", {"text": 3}, "`text`"),
        ("detokenize", {"ids": [1, -1]}, "`ids`"),
        ("detokenize", {"ids": [10**9]}, "not in the vocabulary"),
        ("decode", {"protocol": "chat", "body": "{}", "output": {}}, "`output`"),
        ("decode", {"protocol": "chat", "body": "{}", "output": {"text": "x"}, "chunk_size": 0}, "`chunk_size`"),
        ("blocks", {"protocol": "chat", "a": "{}", "b": "{}", "block_size": 0}, "`block_size`"),
        ("compare", {"bodies": {}}, "`bodies`"),
    ],
)
def test_wrong_calls_get_openai_errors(server: ServerThread, name: str, payload: dict[str, Any], message: str) -> None:
    response = httpx.post(f"{server.url}/webui/api/{name}", json=payload, timeout=30)
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and message in error["message"]


def test_methods_paths_and_bodies(server: ServerThread) -> None:
    url = server.url + "/webui/api/"
    assert httpx.get(url + "render").status_code == 405
    assert httpx.get(url + "render").headers["allow"] == "POST"
    assert httpx.post(url + "info").status_code == 405
    assert httpx.post(url + "nothing", json={}).status_code == 404
    assert (
        httpx.post(url + "render", content=b"[1]", headers=JSON).json()["error"]["message"]
        == "The body must be a JSON object"
    )
    assert httpx.post(url + "render", content=b"{", headers=JSON).status_code == 400
    assert httpx.get(server.url + "/webui/nothing.js").status_code == 404
    assert httpx.get(server.url + "/webui/../pyproject.toml").status_code == 404
    assert httpx.post(server.url + "/webui/index.html").status_code == 405


def test_files_redirects_and_headers(server: ServerThread) -> None:
    root = httpx.get(server.url + "/")
    assert root.status_code == 307 and root.headers["location"] == "webui/"
    page = httpx.get(server.url + "/", follow_redirects=True)
    assert page.status_code == 200 and str(page.url) == server.url + "/webui/"
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    script = httpx.get(server.url + "/webui/js/main.js")
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    again = httpx.get(server.url + "/webui/js/main.js", headers={"if-none-match": script.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    head = httpx.head(server.url + "/webui/style.css")
    assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) > 0


def test_every_page_file_is_served_as_committed(server: ServerThread) -> None:
    """Run against the installed wheel, this proves the wheel ships the whole page."""
    files = [p for p in (ROOT / "webui").rglob("*") if p.is_file()]
    assert len(files) >= 10
    for path in files:
        name = path.relative_to(ROOT / "webui").as_posix()
        response = httpx.get(f"{server.url}/webui/{name}")
        assert response.status_code == 200, name
        assert response.content == path.read_bytes(), name


def test_the_api_shares_the_gateways_key_and_has_a_body_limit() -> None:
    settings = GatewaySettings(log_requests=False, api_keys=["sk-page"], webui_max_body_bytes=2048)  # type: ignore[list-item]
    with serving(create_app(settings)) as server:
        api = server.url + "/webui/api/"
        body = {"protocol": "chat", "body": json.dumps(example("plain")["requests"]["chat"])}
        refused = httpx.post(api + "render", json=body)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
        assert httpx.get(api + "info").status_code == 401
        assert httpx.post(api + "render", json=body, headers={"authorization": "Bearer sk-page"}).status_code == 200
        assert httpx.post(api + "render", json=body, headers={"x-api-key": "sk-page"}).status_code == 200
        big = {"protocol": "chat", "body": "x" * 4096}
        too_large = httpx.post(api + "render", json=big, headers={"x-api-key": "sk-page"})
        assert too_large.status_code == 413 and too_large.json()["error"]["code"] == "request_too_large"
        # As on the API routes: a body not read to its end leaves the connection unusable.
        assert too_large.headers["connection"] == "close"
        # The page's files hold no data and need no key.
        assert httpx.get(server.url + "/webui/").status_code == 200


def test_wrapped_apps_keep_their_root_and_the_page_can_be_off() -> None:
    async def home(request: Any) -> PlainTextResponse:
        return PlainTextResponse("mine")

    app = Gateway(Starlette(routes=[Route("/", home)]), GatewaySettings(log_requests=False))
    with serving(app) as server:
        assert httpx.get(server.url + "/").text == "mine"
        assert httpx.get(server.url + "/webui/").status_code == 200
    with serving(create_app(GatewaySettings(log_requests=False, webui=False))) as server:
        assert httpx.get(server.url + "/").status_code == 404
        assert httpx.get(server.url + "/webui/").status_code == 404
        assert httpx.post(server.url + "/webui/api/render", json={}).status_code == 404


def test_info(server: ServerThread) -> None:
    info = httpx.get(server.url + "/webui/api/info").json()
    assert info["models"] == [
        {"name": "DeepSeek-V4-Pro", "version": "V4", "served": True},
        {"name": "DeepSeek-V4.1-Flash", "version": "V4.1", "served": False},
    ]
    assert info["protocols"] == ["chat", "responses", "messages"] and info["block_size"] == 128
    assert info["version"] == dr.__version__


def test_the_webui_command_serves_the_page(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "deepseek_recipe", "webui", "--port", str(port), "--log-requests", "false"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                page = httpx.get(url + "/", follow_redirects=True, timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, "deepseek-recipe webui did not start"
                time.sleep(0.1)
        assert page.status_code == 200 and "What the model sees" in page.text
        info = httpx.get(url + "/webui/api/info", timeout=5).json()
        assert info["models"][0]["name"] == "DeepSeek-V4-Pro"
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert f"the page is at http://127.0.0.1:{port}/" in err


def test_the_webui_command_runs_the_demo_engine_only() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "deepseek_recipe", "webui", "--backend", "sglang"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "use serve" in done.stderr


def test_the_docs_examples_run(server: ServerThread, capsys: pytest.CaptureFixture[str]) -> None:
    """Every Python example of docs/webui.md runs as written, against a running gateway."""
    import re

    text = (ROOT / "docs" / "webui.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 3
    namespace: dict[str, object] = {}
    for block in blocks:
        code = block.replace("http://127.0.0.1:8000", server.url)
        exec(compile(code, "docs/webui.md", "exec"), namespace)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "typed, plain text: ['<｜User｜>']"
    assert "'name': 'get_weather', 'arguments': '{\"city\": \"Paris\"}'" in lines[2]
    assert lines[3] == "'/thi' [] 'up.</thi'"
    assert lines[4] == "2 shared blocks; {'index': 264, 'a': 128821, 'b': 128822}"  # <think> became </think>
