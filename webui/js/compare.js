// Compare: one conversation written in the three protocols, side by side, and whether the
// engine is given the same ids for each.

import { api } from "./api.js";
import { PROTOCOL_NAMES, countsOf, gallery, runner, showFailure, statusOf } from "./common.js";
import { fill, h } from "./dom.js";
import { pretty } from "./jsonedit.js";
import { count } from "./text.js";
import { PromptViewer } from "./viewer.js";

export function compareView(panel, { examples }) {
  const protocols = Object.keys(PROTOCOL_NAMES);
  const editors = {};
  const columns = {};
  const viewers = {};
  for (const p of protocols) {
    editors[p] = h("textarea", { id: `cmp-${p}`, class: "editor short", spellcheck: "false" });
    columns[p] = { status: h("div", { class: "col-status" }), counts: h("div"), viewer: h("div") };
    viewers[p] = new PromptViewer(columns[p].viewer, { label: `${PROTOCOL_NAMES[p]} prompt` });
  }
  const run = h("button", { type: "button", id: "cmp-run", class: "primary" }, "Compare");
  const verdict = h("div", { id: "cmp-verdict", "aria-live": "polite" });
  const note = h("p", { class: "note" });

  const pick = (example) => {
    for (const p of protocols) editors[p].value = example.requests[p] ? pretty(example.requests[p]) : "";
    note.textContent = example.description + (protocols.every((p) => example.requests[p]) ? "" : " Empty editors are left out.");
    row.mark(example.id);
    go();
  };
  const row = gallery("Examples", examples.examples, pick);

  const go = runner(run, async () => {
    const bodies = {};
    for (const p of protocols) if (editors[p].value.trim()) bodies[p] = editors[p].value;
    const answer = await api("compare", { bodies });
    show(answer);
  }, (error) => showFailure(verdict, error));
  run.addEventListener("click", go);

  function show(answer) {
    const present = Object.keys(answer.results);
    const first = answer.results[present[0]];
    if (answer.identical) {
      fill(verdict, h("div", { class: "status ok verdict", role: "status", dataset: { identical: "true" } },
        h("strong", {}, "Identical ids. "),
        `${present.map((p) => PROTOCOL_NAMES[p]).join(", ")}: the engine gets the same ${count(first.counts.tokens)} tokens.`));
    } else if (answer.first_difference) {
      const d = answer.first_difference;
      fill(verdict, h("div", { class: "status bad verdict", role: "status", dataset: { identical: "false" } },
        h("strong", {}, `The ids differ from token ${count(d.index)}: `),
        Object.entries(d.ids).map(([p, id]) => `${PROTOCOL_NAMES[p]} ${id ?? "(ended)"}`).join(", ")));
    } else {
      fill(verdict, h("div", { class: "status bad verdict", role: "status", dataset: { identical: "false" } },
        h("strong", {}, "No comparison: "), "not every protocol produced ids (see below)."));
    }
    for (const p of protocols) {
      const result = answer.results[p];
      if (!result) {
        fill(columns[p].status, h("p", { class: "empty" }, "Left out."));
        fill(columns[p].counts);
        viewers[p].show(null);
        continue;
      }
      fill(columns[p].status, statusOf(result));
      fill(columns[p].counts, result.counts ? countsOf(result) : "");
      viewers[p].show(result);
      if (answer.first_difference) viewers[p].reveal(answer.first_difference.index, false);
    }
  }

  fill(panel,
    h("div", { class: "field" }, h("span", { class: "label" }, "Examples"), row.el),
    note,
    h("div", { class: "three" },
      protocols.map((p) => h("section", { class: "pane col", "aria-label": PROTOCOL_NAMES[p] },
        h("h3", {}, h("label", { for: `cmp-${p}` }, PROTOCOL_NAMES[p])),
        editors[p]))),
    h("div", { class: "row" }, run, h("span", { class: "hint" }, "Leave an editor empty to leave that protocol out.")),
    verdict,
    h("div", { class: "three results" },
      protocols.map((p) => h("section", { class: "pane col", "aria-label": `${PROTOCOL_NAMES[p]} result` },
        h("h3", {}, PROTOCOL_NAMES[p]), columns[p].status, columns[p].counts, columns[p].viewer))));

  return {
    load(id) {
      pick(examples.examples.find((e) => e.id === id) ?? examples.examples[0]);
    },
  };
}
