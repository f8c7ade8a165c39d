// Encode: a request in, what the model sees out (canonical conversation, prompt with special
// tokens, token boundaries, counts, or the error a client gets).

import { api } from "./api.js";
import {
  bindModel,
  conversationOf,
  countsOf,
  gallery,
  modelOptions,
  protocolOptions,
  requestOf,
  runner,
  showFailure,
  statusOf,
} from "./common.js";
import { debounce, fill, h, select } from "./dom.js";
import { pretty } from "./jsonedit.js";
import { PromptViewer } from "./viewer.js";

const AUTO_RUN_LIMIT = 200_000; // characters: larger requests encode on demand

export function encodeView(panel, { info, examples }) {
  const protocol = select("enc-protocol", "Protocol", protocolOptions(), "chat");
  const model = select("enc-model", "Model", modelOptions(info), info.models[0]?.name);
  const editor = h("textarea", { id: "enc-body", class: "editor", spellcheck: "false", autocomplete: "off", "aria-describedby": "enc-hint" });
  const run = h("button", { type: "button", id: "enc-run", class: "primary" }, "Encode");
  const note = h("p", { class: "note", id: "enc-note", "aria-live": "polite" });
  const status = h("div", { id: "enc-status" });
  const counts = h("div", { id: "enc-counts" });
  const viewerRoot = h("div", { id: "enc-viewer" });
  const conversation = h("div", { id: "enc-conversation" });
  const request = h("div", { id: "enc-request" });
  const viewer = new PromptViewer(viewerRoot, { label: "Rendered prompt" });

  let current = null; // the example loaded, and its text, to follow protocol changes
  const pick = (example) => {
    let p = protocol.el.value;
    if (!example.requests[p]) {
      p = Object.keys(example.requests)[0];
      protocol.el.value = p;
      note.textContent = `“${example.title}” has no ${protocol.el.selectedOptions[0].text} form; showing ${p}.`;
    } else {
      note.textContent = example.description;
    }
    editor.value = pretty(example.requests[p]);
    current = { example, text: editor.value };
    examplesRow.mark(example.id);
    syncModel();
    go();
  };
  const examplesRow = gallery("Examples", examples.examples, pick);
  const syncModel = bindModel(model.el, editor, () => go());
  protocol.el.addEventListener("change", () => {
    if (current && editor.value === current.text && current.example.requests[protocol.el.value]) pick(current.example);
    else go();
  });

  const go = runner(run, async () => {
    const answer = await api("render", { protocol: protocol.el.value, body: editor.value });
    show(answer);
  }, (error) => showFailure(status, error));
  run.addEventListener("click", go);
  const auto = debounce(() => {
    if (editor.value.length <= AUTO_RUN_LIMIT) go();
  }, 400);
  editor.addEventListener("input", () => {
    const unchanged = current && editor.value === current.text;
    examplesRow.mark(unchanged ? current.example.id : null);
    note.textContent = unchanged ? current.example.description : "";
    auto();
  });
  editor.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      go();
    }
  });

  function show(answer) {
    fill(status, statusOf(answer));
    fill(counts, answer.counts ? countsOf(answer) : "");
    viewer.show(answer);
    fill(conversation, conversationOf(answer));
    fill(request, requestOf(answer));
  }

  fill(panel,
    h("div", { class: "split" },
      h("section", { class: "pane inputs", "aria-label": "Request" },
        h("div", { class: "row" }, h("div", { class: "field" }, protocol.label, protocol.el), h("div", { class: "field grow" }, model.label, model.el)),
        h("div", { class: "field" }, h("span", { class: "label" }, "Examples"), examplesRow.el),
        note,
        h("div", { class: "field grow" }, h("label", { for: "enc-body" }, "Request body (JSON)"), editor),
        h("div", { class: "row" }, run, h("span", { class: "hint", id: "enc-hint" }, "Encodes as you type; Ctrl+Enter encodes now."))),
      h("section", { class: "pane results", "aria-label": "What the model sees" },
        status, counts, viewerRoot,
        h("details", { class: "section", open: true }, h("summary", {}, "Canonical conversation"), conversation),
        h("details", { class: "section" }, h("summary", {}, "Engine settings"), request))));

  return {
    load(id) {
      const example = examples.examples.find((e) => e.id === id) ?? examples.examples[0];
      pick(example);
    },
  };
}
