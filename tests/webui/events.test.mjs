// Reading the three protocols' events and responses (shapes as the library emits them).
import assert from "node:assert/strict";
import { test } from "node:test";

import { errorLine, eventName, eventTexts, joinTexts, joinedTexts, summarize } from "../../webui/js/events.js";

const chat = (delta, extra = {}) => ({ event: null, data: { object: "chat.completion.chunk", choices: [{ index: 0, delta, ...extra }] } });

test("chat deltas: reasoning, content, tool name and argument fragments", () => {
  assert.deepEqual(eventTexts("chat", chat({ content: null, reasoning_content: "Think" })), [{ kind: "reasoning", text: "Think" }]);
  assert.deepEqual(eventTexts("chat", chat({ content: "Hi" })), [{ kind: "content", text: "Hi" }]);
  const call = chat({ tool_calls: [{ index: 0, id: "c", type: "function", function: { name: "get_weather", arguments: "" } }] });
  assert.deepEqual(eventTexts("chat", call), [{ kind: "tool", text: "get_weather", index: 0 }]);
  const args = chat({ tool_calls: [{ index: 0, function: { arguments: "{\"city\"" } }] });
  assert.deepEqual(eventTexts("chat", args), [{ kind: "arguments", text: "{\"city\"", index: 0 }]);
  assert.deepEqual(eventTexts("chat", chat({ content: "", reasoning_content: null }, { finish_reason: "stop" })), []);
  assert.equal(eventName("chat", chat({}, { finish_reason: "tool_calls" })), "chunk · finish tool_calls");
});

test("responses events by type", () => {
  const ev = (data) => ({ event: data.type, data });
  assert.deepEqual(eventTexts("responses", ev({ type: "response.reasoning_text.delta", delta: "r" })), [{ kind: "reasoning", text: "r" }]);
  assert.deepEqual(eventTexts("responses", ev({ type: "response.output_text.delta", delta: "c" })), [{ kind: "content", text: "c" }]);
  assert.deepEqual(eventTexts("responses", ev({ type: "response.output_item.added", output_index: 2, item: { type: "function_call", name: "f" } })), [{ kind: "tool", text: "f", index: 2 }]);
  assert.deepEqual(eventTexts("responses", ev({ type: "response.function_call_arguments.delta", output_index: 2, delta: "{" })), [{ kind: "arguments", text: "{", index: 2 }]);
  assert.deepEqual(eventTexts("responses", ev({ type: "response.created", response: {} })), []);
  assert.equal(eventName("responses", ev({ type: "response.created" })), "response.created");
});

test("messages events by block delta type", () => {
  const ev = (data) => ({ event: data.type, data });
  assert.deepEqual(eventTexts("messages", ev({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "t" } })), [{ kind: "reasoning", text: "t", index: 0 }]);
  assert.deepEqual(eventTexts("messages", ev({ type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "x" } })), [{ kind: "content", text: "x", index: 1 }]);
  assert.deepEqual(eventTexts("messages", ev({ type: "content_block_start", index: 2, content_block: { type: "tool_use", name: "f", input: {} } })), [{ kind: "tool", text: "f", index: 2 }]);
  assert.deepEqual(eventTexts("messages", ev({ type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "{}" } })), [{ kind: "arguments", text: "{}", index: 2 }]);
  assert.deepEqual(eventTexts("messages", ev({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "s" } })), []);
});

test("neighbouring texts of one kind are joined", () => {
  const events = [chat({ reasoning_content: "a" }), chat({ reasoning_content: "b" }), chat({ content: "c" }), chat({ content: "d" })];
  assert.deepEqual(joinedTexts("chat", events), [{ kind: "reasoning", text: "ab" }, { kind: "content", text: "cd" }]);
});

test("held-back texts as the decode API gives them are joined the same way", () => {
  const held = [
    { kind: "content", text: "a", index: null },
    { kind: "content", text: "b", index: null },
    { kind: "tool", text: "f", index: 0 },
    { kind: "arguments", text: "{\"x\"", index: 0 },
    { kind: "arguments", text: ": 1", index: 0 },
    { kind: "arguments", text: "", index: 1 },
  ];
  assert.deepEqual(joinTexts(held), [
    { kind: "content", text: "ab" },
    { kind: "tool", text: "f", index: 0 },
    { kind: "arguments", text: "{\"x\": 1", index: 0 },
  ]);
});

test("summaries of the three accumulated responses", () => {
  const c = summarize("chat", { choices: [{ finish_reason: "tool_calls", message: { reasoning_content: "r", content: "", tool_calls: [{ id: "1", function: { name: "f", arguments: "{\"a\": 1}" } }] } }] });
  assert.deepEqual(c, { reasoning: "r", content: "", finish: "tool_calls", toolCalls: [{ name: "f", id: "1", arguments: "{\"a\": 1}", parsed: { a: 1 } }] });
  const r = summarize("responses", { status: "completed", output: [
    { type: "reasoning", content: [{ type: "reasoning_text", text: "r" }], summary: [] },
    { type: "message", content: [{ type: "output_text", text: "hi" }] },
    { type: "function_call", name: "f", call_id: "2", arguments: "{broken" },
  ] });
  assert.equal(r.reasoning, "r");
  assert.equal(r.content, "hi");
  assert.equal(r.toolCalls[0].parsed, undefined);
  assert.match(r.toolCalls[0].error, /JSON/);
  assert.equal(summarize("responses", { status: "incomplete", incomplete_details: { reason: "max_output_tokens" }, output: [] }).finish, "incomplete: max_output_tokens");
  const m = summarize("messages", { stop_reason: "tool_use", content: [
    { type: "thinking", thinking: "t" }, { type: "text", text: "x" }, { type: "tool_use", id: "3", name: "f", input: { a: [1] } },
  ] });
  assert.deepEqual(m.toolCalls, [{ name: "f", id: "3", arguments: "{\"a\":[1]}", parsed: { a: [1] } }]);
  assert.equal(m.finish, "tool_use");
  assert.deepEqual(summarize("chat", null).toolCalls, []);
});

test("client errors as one line, both error shapes", () => {
  assert.equal(errorLine({ status: 400, body: { error: { message: "bad", type: "invalid_request_error" } } }), "400 invalid_request_error: bad");
  assert.equal(errorLine({ status: 401, body: { type: "error", error: { type: "authentication_error", message: "no" } } }), "401 authentication_error: no");
  assert.equal(errorLine(null), "");
});
