// Pieces shared by the modes: protocol names, the model picker, the example gallery, status
// lines and counts, and the canonical conversation.

import { fill, h, jsonBlock } from "./dom.js";
import { errorLine } from "./events.js";
import { field, withField } from "./jsonedit.js";
import { count } from "./text.js";

export const PROTOCOL_NAMES = {
  chat: "Chat Completions",
  responses: "Responses",
  messages: "Messages",
};

export function protocolOptions() {
  return Object.entries(PROTOCOL_NAMES);
}

/** Options for a model picker, from `/webui/api/info`. */
export function modelOptions(info) {
  return info.models.map((m) => [m.name, `${m.name} (${m.version}${m.served ? "" : ", rendered only"})`]);
}

/** Keep a model `<select>` and a request editor in step, both ways. */
export function bindModel(selectEl, editor, onChange) {
  selectEl.addEventListener("change", () => {
    const edited = withField(editor.value, "model", selectEl.value);
    if (edited.text) {
      editor.value = edited.text;
      onChange?.();
    }
  });
  const sync = () => {
    const model = field(editor.value, "model");
    if (model && [...selectEl.options].some((o) => o.value === model)) selectEl.value = model;
  };
  editor.addEventListener("input", sync);
  return sync;
}

/**
 * A row of example buttons. `items`: `[{id, title, description}]`; `onPick(item)`.
 * Returns `{el, mark(id)}` (mark shows which one is loaded).
 */
export function gallery(label, items, onPick) {
  const buttons = items.map((item) =>
    h("button", { type: "button", class: "chip", title: item.description, dataset: { example: item.id }, "aria-pressed": "false", onClick: () => onPick(item) }, item.title),
  );
  const el = h("div", { class: "gallery", role: "group", "aria-label": label }, buttons);
  return {
    el,
    mark(id) {
      for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.example === id));
    },
  };
}

/** The status line and error box for one `render`-like answer. */
export function statusOf(result) {
  if (result.client_error) {
    const box = h("div", { class: "client-error" },
      h("div", { class: "status bad", role: "status" }, h("strong", {}, "A client gets "), errorLine(result.client_error)),
      h("div", { class: "raw-label" }, `HTTP ${result.client_error.status} · application/json · the body exactly as sent`),
      h("pre", { class: "raw", tabindex: 0 }, JSON.stringify(result.client_error.body)));
    if (result.encode_error) {
      box.append(h("p", { class: "note" }, "The prompt renders, but this tokenizer cannot encode it: ", h("code", {}, result.encode_error)));
    }
    return box;
  }
  const maxTokens = result.request?.inference?.resolved_max_tokens;
  return h("div", { class: "status ok", role: "status" },
    h("strong", {}, "Served: "),
    `the engine gets ${count(result.counts?.tokens)} prompt tokens`,
    maxTokens != null ? ` and may write ${count(maxTokens)}` : "",
    ` (${result.model}, ${result.model_version})`);
}

const COUNT_LABELS = [
  ["tokens", "tokens"],
  ["special_tokens", "special tokens"],
  ["segments", "text segments"],
  ["lookalikes", "typed look-alikes"],
  ["characters", "characters"],
  ["bytes", "bytes"],
];

/** The counts of a `render` answer as a definition list. */
export function countsOf(result) {
  const counts = result.counts ?? {};
  return h("dl", { class: "counts" },
    COUNT_LABELS.map(([key, label]) =>
      h("div", { class: `count c-${key}` }, h("dt", {}, label), h("dd", { dataset: { count: key } }, count(counts[key])))));
}

/** The canonical conversation: settings, tools and one card per message. */
export function conversationOf(result) {
  const c = result.conversation;
  if (!c) return h("p", { class: "empty" }, "No conversation: the request did not convert.");
  const settings = h("dl", { class: "settings" },
    [["thinking", c.thinking_mode ? "on" : "off"], ["reasoning effort", c.reasoning_effort ?? "—"],
      ["tool choice", c.tool_choice], ["response format", c.response_format]]
      .map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v))));
  const cards = c.messages.map((m, i) =>
    h("article", { class: `msg r-${m.role}`, "aria-label": `message ${i + 1}: ${m.role}` },
      h("header", {}, h("span", { class: "role" }, m.role), m.tool_call_id ? h("span", { class: "meta" }, `for ${m.tool_call_id}`) : null),
      m.reasoning_content != null ? h("div", { class: "reasoning" }, h("span", { class: "label" }, "reasoning"), m.reasoning_content || "(empty)") : null,
      m.content ? h("div", { class: "content" }, m.content) : null,
      (m.tool_calls ?? []).map((t) => h("div", { class: "call" }, h("code", {}, `${t.name}(${t.arguments})`), h("span", { class: "meta" }, t.id))),
      (m.images ?? []).map((im) => h("div", { class: "meta" }, `image (${im.kind}, detail ${im.detail}) at ${im.path}`))));
  const parts = [settings];
  if (c.tools.length) {
    parts.push(h("details", { class: "tools" }, h("summary", {}, `${c.tools.length} tool${c.tools.length > 1 ? "s" : ""}: ${c.tools.map((t) => t.name).join(", ")}`), jsonBlock(c.tools)));
  }
  if (c.response_schema != null) parts.push(h("details", {}, h("summary", {}, "response schema"), jsonBlock(c.response_schema)));
  return h("div", { class: "conversation" }, parts, cards);
}

/** The engine settings the request resolved to. */
export function requestOf(result) {
  return result.request ? jsonBlock(result.request) : h("p", { class: "empty" }, "—");
}

/**
 * Run `task` for `button` (busy while it runs; errors go to `report`). A call made while it
 * runs is not lost: the task runs once more when the current run ends, with the inputs as
 * they are then, so the last edit always shows.
 */
export function runner(button, task, report) {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    button.setAttribute("aria-busy", "true");
    try {
      do {
        again = false;
        try {
          await task();
        } catch (error) {
          report(error);
        }
      } while (again);
    } finally {
      running = false;
      button.removeAttribute("aria-busy");
    }
  };
}

/** An API failure (not the request's own error) as a message in `el`. */
export function showFailure(el, error) {
  fill(el, h("div", { class: "status bad", role: "alert" },
    h("strong", {}, error.status === 401 ? "The gateway wants an API key. " : "The page's API failed: "),
    error.message));
  if (error.status === 401) document.dispatchEvent(new CustomEvent("need-key"));
}
