// Decode: the model's output (text or token ids) through the request's decoder: what it
// parsed, the protocol's events, the accumulated response, and a replay of every chunk with
// what the decoder was holding back at that point.

import { api } from "./api.js";
import { PROTOCOL_NAMES, gallery, protocolOptions, runner, showFailure } from "./common.js";
import { fill, h, jsonBlock, select } from "./dom.js";
import { eventName, joinTexts, joinedTexts, summarize } from "./events.js";
import { parseIds, pretty } from "./jsonedit.js";
import { count } from "./text.js";

const KIND_NAMES = { reasoning: "reasoning", content: "content", tool: "tool call", arguments: "arguments" };

export function decodeView(panel, { examples }) {
  const protocol = select("dec-protocol", "Protocol", protocolOptions(), "chat");
  const request = h("textarea", { id: "dec-request", class: "editor short", spellcheck: "false" });
  const output = h("textarea", { id: "dec-output", class: "editor short", spellcheck: "false" });
  const modeText = h("input", { type: "radio", name: "dec-mode", id: "dec-mode-text", value: "text", checked: true });
  const modeIds = h("input", { type: "radio", name: "dec-mode", id: "dec-mode-ids", value: "ids" });
  const convert = h("button", { type: "button", id: "dec-convert", class: "secondary" }, "Convert to ids");
  const chunk = h("input", { type: "number", id: "dec-chunk", min: 1, value: 3, inputmode: "numeric" });
  const finish = select("dec-finish", "Finish", [["stop", "stop"], ["length", "length"], ["content_filter", "content filter"], ["", "none (cut off)"]], "stop");
  const run = h("button", { type: "button", id: "dec-run", class: "primary" }, "Decode");
  const note = h("p", { class: "note", "aria-live": "polite" });
  const status = h("div", { id: "dec-status" });
  const parsed = h("div", { id: "dec-parsed" });
  const replay = h("div", { id: "dec-replay" });
  const stream = h("div", { id: "dec-stream" });
  const response = h("div", { id: "dec-response" });

  const mode = () => (modeIds.checked ? "ids" : "text");
  const setMode = (m) => {
    modeText.checked = m === "text";
    modeIds.checked = m === "ids";
    convert.textContent = m === "text" ? "Convert to ids" : "Convert to text";
    chunk.value = m === "text" ? 3 : 1;
  };
  modeText.addEventListener("change", () => setMode("text"));
  modeIds.addEventListener("change", () => setMode("ids"));

  let current = null;
  const pick = (example) => {
    let p = protocol.el.value;
    if (!example.requests[p]) p = protocol.el.value = Object.keys(example.requests)[0];
    request.value = pretty(example.requests[p]);
    setMode("text");
    output.value = example.output.text;
    note.textContent = example.description;
    current = example;
    row.mark(example.id);
    go();
  };
  const row = gallery("Examples", examples.examples.filter((e) => e.output), pick);
  protocol.el.addEventListener("change", () => {
    if (current?.requests[protocol.el.value]) request.value = pretty(current.requests[protocol.el.value]);
    go();
  });

  const conversion = runner(convert, async () => {
    if (mode() === "text") {
      const answer = await api("tokenize", { text: output.value, added_tokens: true });
      output.value = answer.ids.join(" ");
      setMode("ids");
    } else {
      const ids = parseIds(output.value);
      if (ids.error) throw new Error(ids.error);
      const answer = await api("detokenize", { ids: ids.ids });
      output.value = answer.text;
      setMode("text");
    }
  }, (error) => showFailure(status, error));
  convert.addEventListener("click", conversion);

  const go = runner(run, async () => {
    let out;
    if (mode() === "ids") {
      const ids = parseIds(output.value);
      if (ids.error) throw new Error(ids.error);
      out = { ids: ids.ids };
    } else {
      out = { text: output.value };
    }
    const answer = await api("decode", {
      protocol: protocol.el.value,
      body: request.value,
      output: out,
      chunk_size: Math.max(1, Number(chunk.value) || 1),
      finish_reason: finish.el.value || null,
    });
    show(answer);
  }, (error) => showFailure(status, error));
  run.addEventListener("click", go);
  for (const el of [request, output]) {
    el.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        go();
      }
    });
  }

  function show(answer) {
    if (answer.client_error) {
      fill(status, h("div", { class: "client-error" },
        h("div", { class: "status bad", role: "status" }, h("strong", {}, "The request is refused, so there is nothing to decode. A client gets "), `${answer.client_error.status}`),
        h("pre", { class: "raw", tabindex: 0 }, JSON.stringify(answer.client_error.body))));
      for (const el of [parsed, replay, stream, response]) fill(el);
      return;
    }
    const p = answer.protocol;
    const summary = summarize(p, answer.response);
    const steps = answer.steps.length;
    fill(status, h("div", { class: "status ok", role: "status" },
      h("strong", {}, `${PROTOCOL_NAMES[p]}: `),
      `${count(steps)} chunk${steps === 1 ? "" : "s"} of ${answer.chunk_size} ${answer.input === "ids" ? "token" : "character"}${answer.chunk_size === 1 ? "" : "s"}`,
      answer.stopped_at != null ? `; a stop sequence ended the output at chunk ${answer.stopped_at}` : "",
      `; finish: ${summary.finish ?? "—"}`));
    fill(parsed, parsedOf(summary));
    fill(stream, h("pre", { class: "raw sse", tabindex: 0 }, [answer.start, ...answer.steps, answer.end].map((s) => s.sse).join("")));
    fill(response, jsonBlock(answer.response));
    showReplay(answer);
  }

  function showReplay(answer) {
    const p = answer.protocol;
    const steps = answer.steps;
    const texts = steps.map((s) => s.text);
    const range = h("input", { type: "range", id: "dec-step", min: 0, max: Math.max(steps.length - 1, 0), value: 0, "aria-label": "Chunk" });
    const label = h("span", { class: "where", "aria-live": "polite" });
    const fed = h("pre", { class: "fed", tabindex: 0, "aria-label": "Output fed so far" });
    const emitted = h("div", { class: "texts" });
    const held = h("div", { class: "texts held" });
    const events = h("ol", { class: "events" });
    let timer = null;
    const set = (i) => {
      i = Math.max(0, Math.min(i, steps.length - 1));
      range.value = String(i);
      const step = steps[i];
      label.textContent = `chunk ${i + 1} of ${steps.length}`;
      const before = texts.slice(0, i).join("");
      const after = texts.slice(i + 1).join("");
      fill(fed, h("span", { class: "done" }, before), h("mark", { class: "cut" }, step.text), h("span", { class: "later" }, after));
      fill(emitted, textsOf(joinedTexts(p, step.events), "nothing: the decoder waits for more"));
      fill(held, textsOf(joinTexts(step.held), "nothing held back"));
      if (step.held_omitted) held.append(h("p", { class: "note" }, `… and ${count(step.held_omitted)} more characters`));
      fill(events, step.events.map((e) => h("li", {}, h("details", {}, h("summary", {}, eventName(p, e)), jsonBlock(e.data)))));
      if (!step.events.length) events.append(h("li", { class: "empty" }, "no events"));
    };
    const stop = () => {
      clearInterval(timer);
      timer = null;
      play.textContent = "Play";
      play.setAttribute("aria-pressed", "false");
    };
    const play = h("button", { type: "button", class: "secondary", "aria-pressed": "false", onClick: () => {
      if (timer) return stop();
      play.textContent = "Pause";
      play.setAttribute("aria-pressed", "true");
      if (Number(range.value) >= steps.length - 1) set(0);
      timer = setInterval(() => {
        if (Number(range.value) >= steps.length - 1) stop();
        else set(Number(range.value) + 1);
      }, 350);
    } }, "Play");
    range.addEventListener("input", () => {
      stop();
      set(Number(range.value));
    });
    if (!steps.length) {
      fill(replay, h("p", { class: "empty" }, "No output to replay."));
      return;
    }
    fill(replay,
      h("div", { class: "replay-bar" },
        h("button", { type: "button", class: "icon", "aria-label": "First chunk", onClick: () => { stop(); set(0); } }, "«"),
        h("button", { type: "button", class: "icon", "aria-label": "Previous chunk", onClick: () => { stop(); set(Number(range.value) - 1); } }, "‹"),
        range,
        h("button", { type: "button", class: "icon", "aria-label": "Next chunk", onClick: () => { stop(); set(Number(range.value) + 1); } }, "›"),
        h("button", { type: "button", class: "icon", "aria-label": "Last chunk", onClick: () => { stop(); set(steps.length - 1); } }, "»"),
        play, label),
      h("div", { class: "replay-grid" },
        h("div", { class: "cell wide" }, h("h4", {}, "Fed so far (this chunk marked)"), fed),
        h("div", { class: "cell" }, h("h4", {}, "Emitted by this chunk"), emitted),
        h("div", { class: "cell" }, h("h4", {}, "Held back (what ending here would flush)"), held),
        h("div", { class: "cell wide" }, h("h4", {}, "Events of this chunk"), events)));
    set(0);
  }

  fill(panel,
    h("div", { class: "split" },
      h("section", { class: "pane inputs", "aria-label": "Request and output" },
        h("div", { class: "row" }, h("div", { class: "field" }, protocol.label, protocol.el)),
        h("div", { class: "field" }, h("span", { class: "label" }, "Examples"), row.el),
        note,
        h("div", { class: "field grow" }, h("label", { for: "dec-request" }, "Request body (JSON): the decoder's settings come from it"), request),
        h("fieldset", { class: "row" }, h("legend", {}, "Model output as"),
          h("label", { class: "radio" }, modeText, " text"), h("label", { class: "radio" }, modeIds, " token ids"), convert),
        h("div", { class: "field grow" }, h("label", { for: "dec-output" }, "Model output"), output),
        h("div", { class: "row" },
          h("div", { class: "field" }, h("label", { for: "dec-chunk" }, "Chunk size"), chunk),
          h("div", { class: "field" }, finish.label, finish.el),
          run)),
      h("section", { class: "pane results", "aria-label": "Decoded" },
        status,
        h("h3", {}, "Parsed"), parsed,
        h("h3", {}, "Replay"), replay,
        h("details", { class: "section" }, h("summary", {}, "Event stream (SSE, as the client receives it)"), stream),
        h("details", { class: "section", open: true }, h("summary", {}, "Accumulated response (non-streamed)"), response))));

  return {
    load(id) {
      const list = examples.examples.filter((e) => e.output);
      pick(list.find((e) => e.id === id) ?? list[0]);
    },
  };
}

function textsOf(texts, empty) {
  if (!texts.length) return h("p", { class: "empty" }, empty);
  return texts.map((t) => h("div", { class: `text k-${t.kind}` }, h("span", { class: "label" }, KIND_NAMES[t.kind] ?? t.kind), h("span", { class: "body" }, t.text)));
}

function parsedOf(summary) {
  const calls = summary.toolCalls.map((c, i) =>
    h("div", { class: "tool-call", dataset: { tool: c.name ?? "" } },
      h("div", { class: "call-head" }, h("span", { class: "label" }, `tool call ${i + 1}`), h("code", { class: "name" }, c.name), h("span", { class: "meta" }, c.id)),
      c.error
        ? h("div", { class: "status bad" }, `arguments are not JSON (${c.error}): `, h("code", {}, c.arguments))
        : h("pre", { class: "args", tabindex: 0, "aria-label": `arguments of ${c.name}` }, JSON.stringify(c.parsed, null, 2))));
  return h("div", { class: "parsed" },
    h("div", { class: "text k-reasoning" }, h("span", { class: "label" }, "reasoning"), h("span", { class: "body" }, summary.reasoning || "—")),
    h("div", { class: "text k-content" }, h("span", { class: "label" }, "content"), h("span", { class: "body" }, summary.content || "—")),
    calls.length ? calls : h("p", { class: "empty" }, "No tool calls."));
}
