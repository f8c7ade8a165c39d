// Cache: two requests (say turn N and turn N+1 of an agent) cut into the engine's KV blocks:
// how many leading blocks they share, and where and why they part.

import { api } from "./api.js";
import { gallery, protocolOptions, runner, showFailure, statusOf } from "./common.js";
import { fill, h, select } from "./dom.js";
import { pretty } from "./jsonedit.js";
import { around, blockCells, percent } from "./blocks.js";
import { count } from "./text.js";
import { PromptViewer, promptModel, tokenChip } from "./viewer.js";

const STATE_NAMES = {
  shared: "shared: reused from the cache",
  diverged: "computed again",
  partial: "not full: never cached",
  "a-only": "only in A",
  "b-only": "only in B",
};

export function cacheView(panel, { info, examples }) {
  const protocol = select("cache-protocol", "Protocol", protocolOptions(), "chat");
  const size = h("input", { type: "number", id: "cache-block-size", min: 1, value: info.block_size, inputmode: "numeric" });
  const a = h("textarea", { id: "cache-a", class: "editor short", spellcheck: "false" });
  const b = h("textarea", { id: "cache-b", class: "editor short", spellcheck: "false" });
  const run = h("button", { type: "button", id: "cache-run", class: "primary" }, "Cut into blocks");
  const note = h("p", { class: "note" });
  const summary = h("div", { id: "cache-summary", "aria-live": "polite" });
  const strip = h("div", { id: "cache-blocks" });
  const divergence = h("div", { id: "cache-divergence" });
  const viewA = h("div");
  const viewB = h("div");
  const viewerA = new PromptViewer(viewA, { label: "Request A prompt" });
  const viewerB = new PromptViewer(viewB, { label: "Request B prompt" });

  let current = null;
  const pick = (example) => {
    const p = protocol.el.value;
    a.value = pretty(example.a[p]);
    b.value = pretty(example.b[p]);
    note.textContent = example.description;
    current = example;
    row.mark(example.id);
    go();
  };
  const row = gallery("Examples", examples.cache, pick);
  protocol.el.addEventListener("change", () => {
    if (current) pick(current);
  });

  const go = runner(run, async () => {
    const answer = await api("blocks", {
      protocol: protocol.el.value,
      a: a.value,
      b: b.value,
      block_size: Math.max(1, Number(size.value) || info.block_size),
    });
    show(answer);
  }, (error) => showFailure(summary, error));
  run.addEventListener("click", go);
  size.addEventListener("change", go);

  function show(answer) {
    viewerA.show(answer.a);
    viewerB.show(answer.b);
    if (answer.shared_blocks == null) {
      fill(summary, h("div", {}, h("p", {}, "Request A: "), statusOf(answer.a), h("p", {}, "Request B: "), statusOf(answer.b)));
      fill(strip);
      fill(divergence);
      return;
    }
    const n = answer.block_size;
    const lengthA = answer.a.token_ids.length;
    const lengthB = answer.b.token_ids.length;
    const shared = answer.shared_blocks;
    fill(summary, h("div", { class: `status ${shared ? "ok" : "bad"}`, role: "status" },
      h("strong", { dataset: { sharedBlocks: String(shared) } }, `${count(shared)} shared block${shared === 1 ? "" : "s"}`),
      ` of ${count(n)} tokens: B reuses ${count(shared * n)} of its ${count(lengthB)} prompt tokens (${percent(shared * n, lengthB)}) from A's cache. `,
      `A has ${count(answer.full_blocks.a)} full blocks, B ${count(answer.full_blocks.b)}; they agree on their first ${count(answer.common_prefix)} tokens.`));
    const cells = blockCells(lengthA, lengthB, n, shared);
    fill(strip,
      h("div", { class: "blocks", role: "list", "aria-label": "KV blocks of the longer prompt" },
        cells.map((c) => {
          const label = `block ${c.index}: tokens ${c.from}–${c.to - 1}, ${STATE_NAMES[c.state]}`;
          return h("span", {
            class: `block s-${c.state}`,
            role: "listitem",
            title: label,
            "aria-label": label,
            dataset: { block: String(c.index), state: c.state },
          });
        })),
      h("div", { class: "legend" }, Object.entries(STATE_NAMES).map(([state, name]) => h("span", { class: `sw block s-${state}` }, name))));
    showDivergence(answer);
  }

  function showDivergence(answer) {
    const d = answer.first_divergence;
    if (!d) {
      fill(divergence, h("p", { class: "status ok" }, "The two prompts are identical."));
      return;
    }
    const rows = [["A", answer.a], ["B", answer.b]].map(([name, result]) => {
      const model = promptModel(result);
      const length = result.token_ids.length;
      const { from, to } = around(d.index, 12, length);
      const chips = [];
      for (let i = from; i < to; i++) chips.push(tokenChip(model, i, i === d.index ? " target" : ""));
      const ended = d.index >= length ? h("span", { class: "tok ended target" }, "(prompt ends)") : null;
      return h("div", { class: "ctx-row" }, h("span", { class: "label" }, name), h("div", { class: "tokens inline", dataset: { side: name } }, chips, ended));
    });
    const lines = [];
    if (d.a == null) lines.push("A ends here: B is A plus more (the best case: only B's new tail is computed).");
    else if (d.b == null) lines.push("B ends here: B is a prefix of A.");
    fill(divergence,
      h("p", {}, h("strong", { dataset: { divergence: String(d.index) } }, `First divergent token: #${count(d.index)}`),
        ` (A ${d.a ?? "—"}, B ${d.b ?? "—"}), in block ${count(Math.floor(d.index / answer.block_size))}. `, lines),
      rows);
  }

  fill(panel,
    h("div", { class: "row" },
      h("div", { class: "field" }, protocol.label, protocol.el),
      h("div", { class: "field" }, h("label", { for: "cache-block-size" }, "Block size (tokens)"), size)),
    h("div", { class: "field" }, h("span", { class: "label" }, "Examples"), row.el),
    note,
    h("div", { class: "two" },
      h("section", { class: "pane col", "aria-label": "Request A" }, h("h3", {}, h("label", { for: "cache-a" }, "A: the earlier request (turn N)")), a),
      h("section", { class: "pane col", "aria-label": "Request B" }, h("h3", {}, h("label", { for: "cache-b" }, "B: the later request (turn N+1)")), b)),
    h("div", { class: "row" }, run),
    summary, strip, divergence,
    h("details", { class: "section" }, h("summary", {}, "Prompt A"), viewA),
    h("details", { class: "section" }, h("summary", {}, "Prompt B"), viewB));

  return {
    load(id) {
      pick(examples.cache.find((e) => e.id === id) ?? examples.cache[0]);
    },
  };
}
