// Tiny DOM helpers shared by the views.

/**
 * A new element. `props`: `class`, `text`, `hidden`, `on<Event>` handlers, `dataset`, and any
 * other key as an attribute (skipped when null/false). Children: nodes or strings.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2).toLowerCase(), value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

/** Replace the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** The element with this id (throws when missing: a broken page should fail loudly). */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing`);
  return el;
}

/** Call `fn` at most once per `ms`, with the last arguments. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** A labelled `<select>` with `options` (`[value, label]` pairs or strings). */
export function select(id, label, options, value) {
  const el = h("select", { id });
  for (const option of options) {
    const [v, text] = Array.isArray(option) ? option : [option, option];
    el.append(h("option", { value: v, text, selected: v === value }));
  }
  return { label: h("label", { for: id, text: label }), el };
}

/** A `<pre>` of pretty JSON. */
export function jsonBlock(value, cls = "json") {
  return h("pre", { class: cls, tabindex: 0 }, JSON.stringify(value, null, 2));
}

/**
 * Make a row of buttons with role="tab" keyboard-navigable (arrow keys, Home, End) and call
 * `onSelect(tab)` when one is chosen.
 */
export function tablist(list, onSelect) {
  const tabs = () => [...list.querySelectorAll('[role="tab"]')];
  list.addEventListener("click", (event) => {
    const tab = event.target.closest('[role="tab"]');
    if (tab) onSelect(tab);
  });
  list.addEventListener("keydown", (event) => {
    const all = tabs();
    const at = all.indexOf(document.activeElement);
    if (at < 0) return;
    let next = null;
    if (event.key === "ArrowRight" || event.key === "ArrowDown") next = all[(at + 1) % all.length];
    else if (event.key === "ArrowLeft" || event.key === "ArrowUp") next = all[(at - 1 + all.length) % all.length];
    else if (event.key === "Home") next = all[0];
    else if (event.key === "End") next = all[all.length - 1];
    if (next) {
      event.preventDefault();
      next.focus();
      onSelect(next);
    }
  });
}

/** Mark `tab` selected among its siblings and show its panel (`aria-controls`). */
export function selectTab(tab) {
  for (const other of tab.parentElement.querySelectorAll('[role="tab"]')) {
    const on = other === tab;
    other.setAttribute("aria-selected", String(on));
    other.tabIndex = on ? 0 : -1;
    const panel = document.getElementById(other.getAttribute("aria-controls"));
    if (panel) panel.hidden = !on;
  }
}
