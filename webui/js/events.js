// Reading the protocols' events and responses for display: which text each event carries and
// what a finished response holds. Pure functions, no DOM (tested with node --test). Nothing
// here parses model output: the server's decoder already did; this only reads its JSON.

/**
 * The text an event carries, as `[{kind, text, index}]`: kind `reasoning`, `content`,
 * `tool` (a tool call's name) or `arguments` (a fragment of its JSON arguments); `index` is
 * the tool call's or block's position where the protocol says.
 */
export function eventTexts(protocol, event) {
  const data = event.data ?? event;
  const out = [];
  if (protocol === "chat") {
    for (const choice of data.choices ?? []) {
      const delta = choice.delta ?? {};
      if (delta.reasoning_content) out.push({ kind: "reasoning", text: delta.reasoning_content });
      if (delta.content) out.push({ kind: "content", text: delta.content });
      for (const call of delta.tool_calls ?? []) {
        if (call.function?.name) out.push({ kind: "tool", text: call.function.name, index: call.index });
        if (call.function?.arguments) out.push({ kind: "arguments", text: call.function.arguments, index: call.index });
      }
    }
  } else if (protocol === "responses") {
    switch (data.type) {
      case "response.reasoning_text.delta":
      case "response.reasoning_summary_text.delta":
        out.push({ kind: "reasoning", text: data.delta });
        break;
      case "response.output_text.delta":
        out.push({ kind: "content", text: data.delta });
        break;
      case "response.output_item.added":
        if (data.item?.type === "function_call") out.push({ kind: "tool", text: data.item.name, index: data.output_index });
        break;
      case "response.function_call_arguments.delta":
        out.push({ kind: "arguments", text: data.delta, index: data.output_index });
        break;
    }
  } else if (protocol === "messages") {
    if (data.type === "content_block_delta") {
      const d = data.delta ?? {};
      if (d.type === "thinking_delta") out.push({ kind: "reasoning", text: d.thinking, index: data.index });
      else if (d.type === "text_delta") out.push({ kind: "content", text: d.text, index: data.index });
      else if (d.type === "input_json_delta") out.push({ kind: "arguments", text: d.partial_json, index: data.index });
    } else if (data.type === "content_block_start" && data.content_block?.type === "tool_use") {
      out.push({ kind: "tool", text: data.content_block.name, index: data.index });
    }
  }
  return out.filter((t) => t.text);
}

/** The texts of several events, neighbours of one kind joined: `[{kind, text}]`. */
export function joinedTexts(protocol, events) {
  return joinTexts(events.flatMap((event) => eventTexts(protocol, event)));
}

/**
 * Texts (`[{kind, text, index}]`, as `eventTexts` gives them or the decode API's `held`) with
 * neighbours of one kind and index joined; `index` null or absent counts as none.
 */
export function joinTexts(texts) {
  const out = [];
  for (const t of texts) {
    if (!t.text) continue;
    const index = t.index ?? undefined;
    const last = out[out.length - 1];
    if (last && last.kind === t.kind && last.index === index) last.text += t.text;
    else out.push(index === undefined ? { kind: t.kind, text: t.text } : { kind: t.kind, text: t.text, index });
  }
  return out;
}

/** The event's name as its SSE stream names it (Chat events are unnamed: their object). */
export function eventName(protocol, event) {
  if (protocol === "chat") {
    const choice = event.data?.choices?.[0];
    if (choice?.finish_reason) return `chunk · finish ${choice.finish_reason}`;
    return event.data?.usage && !choice ? "chunk · usage" : "chunk";
  }
  return event.event ?? event.data?.type ?? "event";
}

/**
 * What a finished (accumulated) response holds: `{reasoning, content, toolCalls, finish}`,
 * each tool call `{name, id, arguments (text), parsed, error}` where `parsed` is the
 * arguments as JSON (or `error` says why they are not JSON).
 */
export function summarize(protocol, response) {
  const summary = { reasoning: "", content: "", toolCalls: [], finish: null };
  if (!response) return summary;
  const call = (name, id, args) => {
    const entry = { name, id, arguments: typeof args === "string" ? args : JSON.stringify(args) };
    try {
      entry.parsed = typeof args === "string" ? JSON.parse(args) : args;
    } catch (e) {
      entry.error = e.message;
    }
    summary.toolCalls.push(entry);
  };
  if (protocol === "chat") {
    const choice = response.choices?.[0] ?? {};
    const message = choice.message ?? {};
    summary.reasoning = message.reasoning_content ?? "";
    summary.content = message.content ?? "";
    for (const c of message.tool_calls ?? []) call(c.function?.name, c.id, c.function?.arguments ?? "");
    summary.finish = choice.finish_reason ?? null;
  } else if (protocol === "responses") {
    for (const item of response.output ?? []) {
      if (item.type === "reasoning") {
        for (const part of [...(item.content ?? []), ...(item.summary ?? [])]) summary.reasoning += part.text ?? "";
      } else if (item.type === "message") {
        for (const part of item.content ?? []) if (part.type === "output_text") summary.content += part.text;
      } else if (item.type === "function_call") {
        call(item.name, item.call_id, item.arguments ?? "");
      }
    }
    summary.finish = response.status === "incomplete"
      ? `incomplete: ${response.incomplete_details?.reason ?? "?"}`
      : response.status ?? null;
  } else if (protocol === "messages") {
    for (const block of response.content ?? []) {
      if (block.type === "thinking") summary.reasoning += block.thinking ?? "";
      else if (block.type === "text") summary.content += block.text ?? "";
      else if (block.type === "tool_use") call(block.name, block.id, block.input ?? {});
    }
    summary.finish = response.stop_reason ?? null;
  }
  return summary;
}

/** A client error (`{status, body}`) as one line: status, type and message. */
export function errorLine(error) {
  if (!error) return "";
  const body = error.body ?? {};
  const inner = body.error ?? {};
  const type = inner.type ?? body.type ?? "error";
  return `${error.status} ${type}: ${inner.message ?? JSON.stringify(body)}`;
}
