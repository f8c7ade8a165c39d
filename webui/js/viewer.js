// The prompt viewer: the rendered prompt with its special tokens, or its tokens one by one,
// a window at a time so that a 300k-token prompt stays responsive. Used by every mode.

import { fill, h } from "./dom.js";
import {
  count,
  hex,
  mergeMarks,
  overlaps,
  pieces,
  rangesToUnits,
  tokenSpans,
  visible,
  windowAround,
} from "./text.js";

export const TOKEN_WINDOW = 2048;
export const PROMPT_WINDOW = 8192;
const CHAR_WINDOW = 65536;

/** What the viewer needs from one `render` answer, with offsets turned into UTF-16. */
export function promptModel(result) {
  const prompt = result.prompt ?? "";
  const special = rangesToUnits(prompt, result.special_ranges ?? []).map(([s, e]) => [s, e, "special"]);
  const lookalikes = rangesToUnits(prompt, result.lookalike_ranges ?? []).map(([s, e]) => [s, e, "lookalike"]);
  const ids = result.token_ids ?? null;
  const flags = new Uint8Array(ids ? ids.length : 0);
  for (const i of result.special_tokens ?? []) flags[i] = 1;
  return {
    prompt,
    ids,
    spans: result.token_lengths ? tokenSpans(prompt, result.token_lengths) : null,
    marks: mergeMarks(special, lookalikes),
    lookalikes,
    special: flags,
    utf8: null,
  };
}

/** Token `i` of `model`: index, id, text, bytes (hex) and kind. */
export function tokenInfo(model, i) {
  const { spans } = model;
  model.utf8 ??= new TextEncoder().encode(model.prompt);
  const bytes = model.utf8.subarray(spans.byteStarts[i], spans.byteStarts[i + 1]);
  const text = model.prompt.slice(spans.starts[i], spans.ends[i]);
  let kind = "plain";
  if (model.special[i]) kind = "special";
  else if (overlaps(model.lookalikes, spans.starts[i], spans.ends[i])) kind = "lookalike";
  return { index: i, id: model.ids[i], text, bytes: hex(bytes), kind };
}

const KIND_LABEL = {
  special: "special token (one id from the template)",
  lookalike: "plain text that spells a special token: encoded as ordinary tokens",
  plain: "plain text",
};

/** One token as a focusable chip. */
export function tokenChip(model, i, extra = "") {
  const info = tokenInfo(model, i);
  const label = info.text ? visible(info.text) : `‹${info.bytes}›`;
  const chip = h("span", {
    class: `tok k-${info.kind}${i % 2 ? " alt" : ""}${extra}`,
    tabindex: -1,
    dataset: { i: String(i), id: String(info.id) },
    "aria-label": `token ${i}, id ${info.id}, ${info.kind}`,
  }, label);
  return chip;
}

export class PromptViewer {
  /**
   * `root`: an empty element to fill. `options.modes`: which views to offer
   * (`prompt`, `tokens`); `options.label`: the accessible name of the content.
   */
  constructor(root, options = {}) {
    this.root = root;
    this.label = options.label ?? "Prompt";
    this.mode = options.mode ?? "prompt";
    this.model = null;
    this.start = 0;
    this.root.classList.add("viewer");
    this.modeButtons = ["prompt", "tokens"].map((mode) =>
      h("button", {
        type: "button",
        class: "seg",
        "aria-pressed": String(mode === this.mode),
        dataset: { mode },
        onClick: () => this.setMode(mode),
      }, mode === "prompt" ? "Prompt" : "Tokens"),
    );
    this.prev = h("button", { type: "button", class: "icon", "aria-label": "Previous window", onClick: () => this.page(-1) }, "‹");
    this.next = h("button", { type: "button", class: "icon", "aria-label": "Next window", onClick: () => this.page(1) }, "›");
    this.where = h("span", { class: "where", "aria-live": "polite" });
    this.jump = h("input", { type: "number", min: 0, inputmode: "numeric", "aria-label": "Go to token", placeholder: "token #" });
    this.jump.addEventListener("change", () => {
      const i = Number(this.jump.value);
      if (Number.isInteger(i) && i >= 0) this.reveal(i);
    });
    this.pager = h("div", { class: "pager" }, this.prev, this.where, this.next, this.jump);
    this.content = h("div", { class: "viewer-content" });
    this.detail = h("div", { class: "token-detail", "aria-live": "polite" }, "Hover or focus a token to see its id and bytes.");
    const legend = h("div", { class: "legend", "aria-hidden": "true" },
      h("span", { class: "sw sw-special" }, "special token"),
      h("span", { class: "sw sw-lookalike" }, "typed text that spells one"),
      h("span", { class: "sw sw-plain" }, "plain text"));
    fill(root,
      h("div", { class: "viewer-bar" },
        h("div", { class: "segmented", role: "group", "aria-label": "Show" }, this.modeButtons),
        this.pager),
      legend, this.content, this.detail);
    this.content.addEventListener("mouseover", (e) => this.describe(e.target));
    this.content.addEventListener("focusin", (e) => this.describe(e.target));
    this.content.addEventListener("keydown", (e) => this.key(e));
  }

  /** Show a `render` answer (or clear with null). */
  show(result) {
    this.model = result && result.prompt != null ? promptModel(result) : null;
    this.start = 0;
    this.render();
  }

  setMode(mode) {
    this.mode = mode;
    for (const b of this.modeButtons) b.setAttribute("aria-pressed", String(b.dataset.mode === mode));
    this.render();
  }

  /** Items (tokens, or characters when there are no token boundaries) and window size. */
  units() {
    const m = this.model;
    if (m.spans) return { total: m.ids.length, size: this.mode === "tokens" ? TOKEN_WINDOW : PROMPT_WINDOW, what: "tokens" };
    return { total: m.prompt.length, size: CHAR_WINDOW, what: "characters" };
  }

  page(delta) {
    if (!this.model) return;
    const { total, size } = this.units();
    const start = this.start + delta * size;
    if (start < 0 || start >= total) return;
    this.start = start;
    this.render();
  }

  /** Show the window holding token `i` in token view, and focus that token. */
  reveal(i, focus = true) {
    if (!this.model?.spans) return;
    const { total } = this.units();
    if (i >= total) return;
    if (this.mode !== "tokens") this.setMode("tokens");
    this.start = windowAround(total, TOKEN_WINDOW, i).start;
    this.render();
    const chip = this.content.querySelector(`[data-i="${i}"]`);
    if (chip) {
      chip.classList.add("target");
      if (focus) chip.focus();
      else chip.scrollIntoView({ block: "nearest" });
      this.describe(chip);
    }
  }

  render() {
    const m = this.model;
    this.pager.hidden = !m;
    if (!m) {
      fill(this.content, h("p", { class: "empty" }, "Nothing to show."));
      return;
    }
    if (this.mode === "tokens" && !m.spans) {
      fill(this.content, h("p", { class: "empty" }, "No token boundaries: the gateway encodes no ids for this request."));
      this.where.textContent = "";
      return;
    }
    const { total, size, what } = this.units();
    const w = windowAround(total, size, this.start);
    this.start = w.start;
    this.where.textContent = total
      ? `${what} ${count(w.start)}–${count(w.end - 1)} of ${count(total)}`
      : `no ${what}`;
    this.prev.disabled = w.start === 0;
    this.next.disabled = w.end >= total;
    this.pager.classList.toggle("single", total <= size);
    if (this.mode === "tokens") this.renderTokens(w);
    else this.renderPrompt(w);
  }

  renderPrompt(w) {
    const m = this.model;
    let from = w.start;
    let to = w.end;
    if (m.spans) {
      from = m.spans.starts[w.start];
      to = w.end < m.ids.length ? m.spans.starts[w.end] : m.prompt.length;
    }
    const pre = h("pre", { class: "prompt", tabindex: 0, "aria-label": this.label });
    for (const piece of pieces(m.prompt, from, to, m.marks)) {
      if (piece.kind === "special") {
        pre.append(h("mark", { class: "special", title: "special token" }, piece.text));
      } else if (piece.kind === "lookalike") {
        pre.append(h("span", { class: "lookalike", title: "plain text that spells a special token: encoded as ordinary tokens" }, piece.text));
      } else {
        pre.append(piece.text);
      }
    }
    fill(this.content, pre);
  }

  renderTokens(w) {
    const m = this.model;
    const box = h("div", { class: "tokens", role: "list", "aria-label": `${this.label}: tokens` });
    const frag = document.createDocumentFragment();
    for (let i = w.start; i < w.end; i++) {
      const chip = tokenChip(m, i);
      chip.setAttribute("role", "listitem");
      if (i === w.start) chip.tabIndex = 0;
      frag.append(chip);
      const text = m.prompt.slice(m.spans.starts[i], m.spans.ends[i]);
      if (text.endsWith("\n")) frag.append(h("br"));
    }
    box.append(frag);
    fill(this.content, box);
  }

  describe(target) {
    const chip = target?.closest?.(".tok");
    if (!chip || !this.model?.spans) return;
    const info = tokenInfo(this.model, Number(chip.dataset.i));
    fill(this.detail,
      h("span", { class: "d-index" }, `#${count(info.index)}`), " ",
      h("span", { class: "d-id" }, `id ${info.id}`), " ",
      h("span", { class: `d-kind k-${info.kind}` }, KIND_LABEL[info.kind]), " ",
      h("code", { class: "d-text" }, JSON.stringify(info.text)), " ",
      h("span", { class: "d-bytes" }, `bytes ${info.bytes}`));
  }

  key(event) {
    const chip = event.target.closest?.(".tok");
    if (!chip) return;
    const i = Number(chip.dataset.i);
    const step = { ArrowRight: 1, ArrowDown: 16, ArrowLeft: -1, ArrowUp: -16 }[event.key];
    let target = null;
    if (step) target = i + step;
    else if (event.key === "Home") target = this.start;
    else if (event.key === "End") target = Math.min(this.start + TOKEN_WINDOW, this.model.ids.length) - 1;
    else if (event.key === "PageDown") target = this.start + TOKEN_WINDOW;
    else if (event.key === "PageUp") target = this.start - TOKEN_WINDOW;
    if (target == null) return;
    event.preventDefault();
    target = Math.max(0, Math.min(target, this.model.ids.length - 1));
    const next = this.content.querySelector(`[data-i="${target}"]`);
    if (next) {
      chip.tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    } else {
      this.reveal(target);
    }
  }
}
