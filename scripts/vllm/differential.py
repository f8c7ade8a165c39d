"""The differential table: vLLM's built-in DeepSeek V4 path, and vLLM with this library's plugin,
each against the official encoder, on real vLLM.

Two parts, each over this repository's conformance corpus (``tests/conformance/``):

- **prompts**: every request case of the three protocols is sent to both servers; the ids the
  engine was fed (recorded inside the engine by the test logits processor,
  ``tests/vllm/force_ids.py``) are compared with ``Frontend.prepare``'s, which are the official
  encoder's. Special tokens a user typed that became control tokens are counted apart.
- **outputs**: every Chat output case (a request and the model's output, as text or ids) is
  scripted into the engine and streamed back through each server's reasoning and tool parsers;
  the reasoning, content and tool calls the client receives are compared with what the official
  API's parser makes of the same ids (``Decoder``), and DSML markup that leaks into content or
  arguments, and arguments that arrive in one piece, are counted.

Run it in the vLLM virtualenv (``bash scripts/vllm/env.sh WHEEL`` prints it)::

    $VLLM/bin/python scripts/vllm/differential.py --write      # all cases; rewrites
                                                                # docs/vllm-differential.json and
                                                                # the table in docs/vllm.md
    $VLLM/bin/python scripts/vllm/differential.py --sample 40  # the injection cases and a
                                                                # sample, printed only

It starts both vLLM servers itself (a tiny random-weight model with the DeepSeek V4 vocabulary,
built in a temporary folder). ``tests/vllm/test_differential.py`` runs a sample in CI and fails
if this library ever puts a typed special token into a prompt.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.vllm.servers import PLUGIN_FLAGS, SERVED_NAME, STOCK_FLAGS, Scripts, VllmServer  # noqa: E402

import deepseek_recipe as dr  # noqa: E402

CASES = ROOT / "tests" / "conformance"
TABLE = ROOT / "docs" / "vllm-differential.json"
DOC = ROOT / "docs" / "vllm.md"
BEGIN, END = "<!-- differential:begin -->", "<!-- differential:end -->"
PROTOCOLS = {"chat_completions": "chat", "responses": "responses", "messages": "messages"}
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
DSML = "｜DSML｜"
SIDES = ("stock", "plugin")

# -- the cases -------------------------------------------------------------------------------


def request_cases() -> list[dict[str, Any]]:
    """The request cases a V4 deployment can be asked (a JSON object body for the V4 model)."""
    out = []
    for path in sorted((CASES / "requests").glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))["case"]
        body = case.get("body")
        if case.get("options") or not isinstance(body, dict) or body.get("model") != SERVED_NAME:
            continue
        out.append({"id": case["id"], "protocol": PROTOCOLS[case["protocol"]], "body": body})
    return out


def output_cases(tokenizer: dr.Tokenizer) -> list[dict[str, Any]]:
    """The Chat output cases for the V4 model, one per family: a request and the output ids."""
    out = []
    for path in sorted((CASES / "outputs").glob("*-cc-whole.json")):
        case = json.loads(path.read_text(encoding="utf-8"))["case"]
        body = case["request_body"]
        # JSON output modes are vLLM's structured outputs, not its parsers': left out.
        if body.get("model") != SERVED_NAME or "response_format" in body:
            continue
        ids = case["token_ids"] if case["mode"] == "tokens" else tokenizer.encode(case["output_text"])
        out.append({"id": case["id"], "body": body, "output_ids": ids})
    return out


# -- prompts ---------------------------------------------------------------------------------


def official_prompt(frontend: dr.Frontend, protocol: str, body: dict[str, Any]) -> list[int] | None:
    try:
        return frontend.prepare(protocol, body).prompt_ids.tolist()  # type: ignore[arg-type]
    except (ValueError, OverflowError, dr.ConversionError, RuntimeError):
        return None


def engine_prompt(
    client: httpx.Client, server: VllmServer, scripts: Scripts, protocol: str, body: dict[str, Any]
) -> tuple[int, list[int] | None]:
    """The HTTP status vLLM answered and the ids it fed the model (``None`` when it refused)."""
    request = dict(body)
    request["stream"] = False
    request.pop("stream_options", None)
    if protocol == "responses":
        request["store"] = False
    since = time.time()
    response = client.post(
        server.url + PATHS[protocol],
        content=json.dumps(request, allow_nan=True).encode(),
        headers={"content-type": "application/json"},
    )
    if response.status_code != 200:
        return response.status_code, None
    seen = scripts.seen_after(since)
    return 200, seen[-1] if seen else None


def control_tokens(tokenizer_json: dict[str, Any]) -> dict[str, int]:
    """Every added token (``<｜User｜>``, ``<think>``, ``｜DSML｜``…) by spelling: text a user types
    must never become one of these."""
    return {token["content"]: token["id"] for token in tokenizer_json["added_tokens"]}


# Why a prompt differs, most specific first. The names are what docs/vllm.md explains.
TYPED = "typed special token became a control token"
THINKING = "the request's `thinking` field is not carried"
SYSTEM_BLOCKS = "Anthropic `system` blocks joined by vLLM"
SYSTEM_MESSAGE = "an Anthropic `system` message moved into the system prompt"
OUTPUT_CONFIG = "Anthropic `output_config.format` carried as a response format"
TEXT_FORMAT = "Responses `text.format` not carried"
CUSTOM_TOOLS = "Responses custom tools"
CONSECUTIVE = "consecutive assistant messages"
PREFIX = "an assistant `prefix` message is closed"
TOOL_ARGS = "tool-call arguments that are not an object"
RESPONSE_FORMAT = "the JSON response-format instruction"
REMINDER = "latest reminder placement"
TOOL_FIELDS = "tool definition fields (`strict`, missing description or parameters)"
PARTS = "content given as a list of parts"
REASONING_ITEMS = "Responses reasoning items"
EFFORT = "reasoning effort or thinking settings"


def prompt_category(case: dict[str, Any], official: list[int], got: list[int], controls: set[int]) -> str:
    """Why the engine's prompt differs from the official one: the first rule that applies, most
    specific first (a heuristic over the request's features; each row keeps its example)."""
    body, protocol = case["body"], case["protocol"]
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    items = [i for i in body.get("input") or [] if isinstance(i, dict)] if isinstance(body.get("input"), list) else []
    roles = [m.get("role") for m in messages] + [i.get("role") for i in items if i.get("type", "message") == "message"]
    if case.get("typed"):
        return TYPED
    if protocol == "chat" and "thinking" in body:
        return THINKING
    if protocol == "messages" and isinstance(body.get("system"), list):
        return SYSTEM_BLOCKS
    if protocol == "messages" and "system" in roles:
        return SYSTEM_MESSAGE
    if protocol == "messages" and isinstance((body.get("output_config") or {}).get("format"), dict):
        return OUTPUT_CONFIG
    if protocol == "responses" and isinstance(body.get("text"), dict) and body["text"].get("format"):
        return TEXT_FORMAT
    if protocol == "responses" and any(
        isinstance(t, dict) and t.get("type") == "custom" for t in body.get("tools") or ()
    ):
        return CUSTOM_TOOLS
    if any(m.get("prefix") for m in messages):
        return PREFIX
    if any(a == b == "assistant" for a, b in itertools.pairwise(roles)):
        return CONSECUTIVE
    if _tool_args_not_object(messages):
        return TOOL_ARGS
    if isinstance(body.get("response_format"), dict) and body["response_format"].get("type") not in (None, "text"):
        return RESPONSE_FORMAT
    if "latest_reminder" in roles:
        return REMINDER
    for tool in body.get("tools") or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if isinstance(function, dict) and (
            "strict" in function or function.get("description") is None or function.get("parameters") is None
        ):
            return TOOL_FIELDS
    if any(isinstance(m.get("content"), list) for m in messages):
        return PARTS
    if any(item.get("type") == "reasoning" for item in items):
        return REASONING_ITEMS
    if any(key in body for key in ("reasoning_effort", "reasoning", "output_config", "thinking")):
        return EFFORT
    return "other"


def _tool_args_not_object(messages: Iterable[Any]) -> bool:
    for message in messages:
        for call in (message.get("tool_calls") or ()) if isinstance(message, dict) else ():
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            try:
                if not isinstance(json.loads(arguments), dict):
                    return True
            except (TypeError, ValueError):
                return True
    return False


def prompt_rows(
    cases: Sequence[dict[str, Any]],
    servers: dict[str, VllmServer],
    scripts: Scripts,
    frontend: dr.Frontend,
    control: dict[str, int],
) -> list[dict[str, Any]]:
    controls, spellings = set(control.values()), sorted(control, key=len, reverse=True)
    rows = []
    with httpx.Client(timeout=300) as client:
        for case in cases:
            official = official_prompt(frontend, case["protocol"], case["body"])
            row: dict[str, Any] = {"id": case["id"], "protocol": case["protocol"], "official": official is not None}
            neutral = _neutral(case["body"], spellings) if _spells_control(case["body"], spellings) else None
            # What typed spellings add to the official prompt: the official encoder itself makes
            # control tokens of some spellings in an assistant's own text (<｜box｜> and the like).
            official_added = 0
            if official is not None and neutral is not None:
                official_twin = official_prompt(frontend, case["protocol"], neutral)
                if official_twin is not None:
                    official_added = _count(official, controls) - _count(official_twin, controls)
            for side, server in servers.items():
                status, got = engine_prompt(client, server, scripts, case["protocol"], case["body"])
                result: dict[str, Any] = {"status": status, "served": got is not None}
                if got is not None and neutral is not None:
                    # The same request with every typed spelling broken keeps the template's own
                    # control tokens: a surplus beyond the official one came from request text.
                    _, twin = engine_prompt(client, server, scripts, case["protocol"], neutral)
                    if twin is not None:
                        added = _count(got, controls) - _count(twin, controls)
                        result["typed_control_tokens"] = max(0, added - official_added)
                if official is not None and got is not None:
                    result["equal"] = got == official
                    if got != official:
                        result["category"] = prompt_category(
                            {**case, "typed": result.get("typed_control_tokens")}, official, got, controls
                        )
                        result["example"] = _difference(frontend.tokenizer, official, got)
                row[side] = result
            rows.append(row)
    return rows


def _count(ids: Sequence[int], controls: set[int]) -> int:
    return sum(token in controls for token in ids)


def _spells_control(value: Any, spellings: Sequence[str]) -> bool:
    if isinstance(value, str):
        return any(spelling in value for spelling in spellings)
    if isinstance(value, dict):
        return any(_spells_control(v, spellings) for v in value.values())
    if isinstance(value, list):
        return any(_spells_control(v, spellings) for v in value)
    return False


def _neutral(value: Any, spellings: Sequence[str]) -> Any:
    """``value`` with every added-token spelling in its strings broken by a space."""
    if isinstance(value, str):
        for spelling in spellings:
            value = value.replace(spelling, spelling[0] + " " + spelling[1:])
        return value
    if isinstance(value, dict):
        return {k: _neutral(v, spellings) for k, v in value.items()}
    if isinstance(value, list):
        return [_neutral(v, spellings) for v in value]
    return value


def _difference(tokenizer: dr.Tokenizer, official: list[int], got: list[int]) -> dict[str, str]:
    at = next((i for i, (a, b) in enumerate(zip(official, got)) if a != b), min(len(official), len(got)))
    start = max(0, at - 6)
    return {
        "official": tokenizer.decode(official[start : at + 14]),
        "vllm": tokenizer.decode(got[start : at + 14]),
    }


# -- outputs ---------------------------------------------------------------------------------


def official_reply(frontend: dr.Frontend, body: dict[str, Any], ids: list[int]) -> dict[str, Any]:
    """What the official API's parser makes of ``ids`` (streamed, so argument deltas count)."""
    prepared = frontend.prepare("chat", {**body, "stream": True})
    decoder = prepared.decoder()
    events = decoder.start(prompt_tokens=len(prepared.prompt_ids))
    # The end of sentence is the engine's stop token: it ends the output and is not parsed (the
    # gateway's engines drop it the same way).
    for token in (i for i in ids if i not in prepared.stop_token_ids):
        events += decoder.push_tokens([token])
        if decoder.finished:
            break
    events += decoder.finish("stop")
    return _collect(json.loads(event.to_json()) for event in events)


def engine_reply(client: httpx.Client, server: VllmServer, body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    # Log probabilities list each chunk's tokens: a chunk of several tokens is vLLM's output
    # handler merging what the client had not yet read (a loaded machine), not a parser's choice.
    request = {**body, "stream": True, "max_tokens": max_tokens, "logprobs": True}
    request.pop("stream_options", None)
    request.pop("top_logprobs", None)
    chunks = []
    with client.stream("POST", server.url + PATHS["chat"], json=request) as response:
        if response.status_code != 200:
            response.read()
            return {"status": response.status_code}
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[6:]))
    return _collect(chunks)


def _collect(chunks: Iterable[dict[str, Any]]) -> dict[str, Any]:
    reasoning, content = "", ""
    calls: dict[int, dict[str, Any]] = {}
    merged = False
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            merged = merged or len((choice.get("logprobs") or {}).get("content") or ()) > 1
            delta = choice.get("delta") or {}
            reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
            content += delta.get("content") or ""
            for call in delta.get("tool_calls") or ():
                entry = calls.setdefault(call["index"], {"name": "", "arguments": "", "argument_deltas": 0})
                function = call.get("function") or {}
                entry["name"] += function.get("name") or ""
                if function.get("arguments"):
                    entry["arguments"] += function["arguments"]
                    entry["argument_deltas"] += 1
    tool_calls = [calls[i] for i in sorted(calls)]
    return {"status": 200, "reasoning": reasoning, "content": content, "tool_calls": tool_calls, "merged": merged}


def for_vllm(body: dict[str, Any]) -> dict[str, Any]:
    """The request as a vLLM client says the same: vLLM carries thinking in template arguments."""
    body = dict(body)
    thinking = body.pop("thinking", None)
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled"):
        body["chat_template_kwargs"] = {"thinking": thinking["type"] == "enabled"}
    return body


GRAMMAR = "tool_choice forced: vLLM's tool-call grammar refuses or cuts a scripted output"
STOP = "stop sequence matched by vLLM in the raw output (reasoning, markup)"
MERGED = "vLLM merged several tokens into one chunk (a loaded machine): deltas not comparable"


def _dsml_in(reply: dict[str, Any]) -> int:
    texts = [reply["content"], reply["reasoning"], *(call["arguments"] for call in reply["tool_calls"])]
    return sum(text.count(DSML) for text in texts)


def output_category(official: dict[str, Any], got: dict[str, Any]) -> str | None:
    if got.get("status") != 200:
        return GRAMMAR
    if _dsml_in(got) > _dsml_in(official):
        return "DSML markup leaks into content or arguments"
    if len(got["tool_calls"]) != len(official["tool_calls"]):
        return "tool calls missing or extra"
    for mine, theirs in zip(official["tool_calls"], got["tool_calls"]):
        if mine["name"] != theirs["name"]:
            return "tool name differs"
        if mine["arguments"] != theirs["arguments"]:
            try:
                same = json.loads(mine["arguments"]) == json.loads(theirs["arguments"])
            except ValueError:
                same = False
            return "argument text differs (same JSON value)" if same else "argument values differ"
        if mine["argument_deltas"] > 1 and theirs["argument_deltas"] <= 1:
            return MERGED if got.get("merged") else "arguments arrive in one piece"
    if got["reasoning"] != official["reasoning"]:
        return "reasoning differs"
    if got["content"] != official["content"]:
        return "content differs"
    return None


def explain(body: dict[str, Any], category: str | None) -> str | None:
    """A difference vLLM's own request handling explains, named as such."""
    if category is None or category == GRAMMAR:
        return category
    if body.get("stop"):
        return STOP
    if body.get("tool_choice") not in (None, "auto", "none"):
        return GRAMMAR
    return category


def output_rows(
    cases: Sequence[dict[str, Any]], servers: dict[str, VllmServer], scripts: Scripts, frontend: dr.Frontend
) -> list[dict[str, Any]]:
    eos = frontend.stop_token_ids[0]
    rows = []
    with httpx.Client(timeout=300) as client:
        for case in cases:
            ids = list(case["output_ids"])
            ids = ids[: ids.index(eos) + 1] if eos in ids else [*ids, eos]
            body = for_vllm(case["body"])
            official = official_reply(frontend, case["body"], ids)
            row: dict[str, Any] = {"id": case["id"]}
            for side, server in servers.items():
                status, prompt = engine_prompt(client, server, scripts, "chat", body)
                if prompt is None:
                    # The probe ends at once (the end of sentence); a forced tool choice's grammar
                    # does not allow that, and vLLM fails the request.
                    forced = body.get("tool_choice") not in (None, "auto", "none")
                    row[side] = {
                        "status": status,
                        "category": GRAMMAR if forced else f"refused by vLLM (HTTP {status})",
                    }
                    continue
                scripts.script(prompt, ids)
                got = engine_reply(client, server, body, len(ids) + 4)
                category = explain(body, output_category(official, got))
                row[side] = {"status": got["status"], "equal": category is None}
                if category is not None:
                    row[side]["category"] = category
                    row[side]["example"] = {"official": _brief(official), "vllm": _brief(got)}
            rows.append(row)
    return rows


def _brief(reply: dict[str, Any]) -> dict[str, Any]:
    return {key: reply.get(key) for key in ("reasoning", "content", "tool_calls")}


# -- the table ---------------------------------------------------------------------------------


def summary(prompts: Sequence[dict[str, Any]], outputs: Sequence[dict[str, Any]]) -> str:
    lines = ["| | vLLM's `deepseek_v4` | vLLM + `deepseek_recipe` |", "|---|---|---|"]
    for protocol in ("chat", "responses", "messages"):
        rows = [r for r in prompts if r["protocol"] == protocol]
        cells = []
        for side in SIDES:
            both = [r for r in rows if r["official"] and r[side]["served"]]
            equal = sum(r[side].get("equal", False) for r in both)
            cells.append(f"{equal} of {len(both)} equal")
        lines.append(f"| {protocol}: prompt ids equal to the official encoder's | {cells[0]} | {cells[1]} |")
    for side_label, key in (("requests with a typed special token made a control token", "typed_control_tokens"),):
        cells = [str(sum(1 for r in prompts if r[side].get(key))) for side in SIDES]
        lines.append(f"| {side_label} | {cells[0]} | {cells[1]} |")
    cells = [
        f"{sum(1 for r in prompts if not r['official'] and r[s]['served'])} / "
        f"{sum(1 for r in prompts if r['official'] and not r[s]['served'])}"
        for s in SIDES
    ]
    lines.append(f"| served though the official encoder refuses / refused though it serves | {cells[0]} | {cells[1]} |")
    cells = [f"{sum(1 for r in outputs if r[s].get('equal'))} of {len(outputs)} equal" for s in SIDES]
    lines.append(
        f"| chat outputs: reasoning, content and tool calls as the official parser's | {cells[0]} | {cells[1]} |"
    )
    lines += ["", "Differences by category (prompts, then outputs), with one example each:", ""]
    for title, rows in (("prompt", prompts), ("output", outputs)):
        for side in SIDES:
            counts = Counter(r[side]["category"] for r in rows if r[side].get("category"))
            for category, count in counts.most_common():
                example = next(r for r in rows if r[side].get("category") == category)
                detail = json.dumps(example[side].get("example"), ensure_ascii=False)
                lines.append(
                    f"- {title}, {'vLLM' if side == 'stock' else 'plugin'}: **{category}** ({count}) "
                    f"e.g. `{example['id']}`: `{detail[:300]}`"
                )
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text(encoding="utf-8")
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    DOC.write_text(doc[:start] + "\n" + text + "\n" + doc[end:], encoding="utf-8")


def sample_cases(size: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every request case that types special tokens, ``size`` others, and a quarter as many
    output cases, chosen with ``seed``."""
    tokenizer = dr.default_tokenizer()
    requests, outputs = request_cases(), output_cases(tokenizer)
    rng = random.Random(seed)
    injected = [case for case in requests if "inject" in case["id"]]
    others = [case for case in requests if "inject" not in case["id"]]
    chosen = injected + rng.sample(others, min(size, len(others)))
    return chosen, rng.sample(outputs, min(max(size // 4, 1), len(outputs)))


def run(
    servers: dict[str, VllmServer],
    scripts: Scripts,
    requests: Sequence[dict[str, Any]],
    outputs: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    frontend = dr.Frontend()
    tokenizer_json = json.loads(Path(dr.default_tokenizer_path()).read_text(encoding="utf-8"))
    default = scripts.folder / "default.json"
    # Unscripted prompts (every request case, and each output case's first, probing request) get
    # the end of sentence at once: the table needs their prompts, not their random output.
    default.write_text(json.dumps(frontend.stop_token_ids))
    try:
        prompts = prompt_rows(requests, servers, scripts, frontend, control_tokens(tokenizer_json))
        return prompts, output_rows(outputs, servers, scripts, frontend)
    finally:
        default.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="all cases; rewrite the table and docs/vllm.md")
    parser.add_argument("--sample", type=int, help="injection cases plus this many others (a quarter as many outputs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = work / "model"
        model.mkdir()
        subprocess.run([sys.executable, str(ROOT / "tests" / "vllm" / "tiny_model.py"), str(model)], check=True)
        scripts = Scripts(work / "scripts")
        servers = {
            "stock": VllmServer(model, scripts, work / "stock.log", STOCK_FLAGS),
            "plugin": VllmServer(model, scripts, work / "plugin.log", PLUGIN_FLAGS),
        }
        try:
            for server in servers.values():
                server.wait_ready()
            if args.write:
                cases = request_cases(), output_cases(dr.default_tokenizer())
            else:
                cases = sample_cases(args.sample or 40)
            prompts, outputs = run(servers, scripts, *cases)
        finally:
            for server in servers.values():
                server.stop()
    text = summary(prompts, outputs)
    print(text)
    if args.write:
        TABLE.write_text(
            json.dumps({"prompts": prompts, "outputs": outputs}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
        write_doc(text)


if __name__ == "__main__":
    main()
