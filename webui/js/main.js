// The page: four modes behind tabs (the URL's #hash names the mode), a theme switch, and the
// gateway's API key when it asks for one.

import { api, apiKey, setApiKey } from "./api.js";
import { cacheView } from "./cache.js";
import { compareView } from "./compare.js";
import { decodeView } from "./decode.js";
import { byId, fill, h, selectTab, tablist } from "./dom.js";
import { encodeView } from "./encode.js";

const MODES = ["encode", "decode", "compare", "cache"];
const THEMES = ["auto", "light", "dark"];
const THEME_KEY = "deepseek-recipe.theme";

function applyTheme(theme) {
  if (theme === "auto") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  const button = byId("theme");
  button.textContent = `Theme: ${theme}`;
  button.dataset.value = theme;
}

function setUpTheme() {
  let theme = "auto";
  try {
    theme = localStorage.getItem(THEME_KEY) ?? "auto";
  } catch {
    // no storage: the theme follows the system
  }
  applyTheme(THEMES.includes(theme) ? theme : "auto");
  byId("theme").addEventListener("click", () => {
    const next = THEMES[(THEMES.indexOf(byId("theme").dataset.value) + 1) % THEMES.length];
    applyTheme(next);
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch {
      // ignore
    }
  });
}

function setUpKey(onKey) {
  const dialog = byId("key-dialog");
  const input = byId("key-input");
  byId("key").addEventListener("click", () => {
    input.value = apiKey();
    dialog.showModal();
  });
  document.addEventListener("need-key", () => {
    if (!dialog.open) {
      input.value = apiKey();
      dialog.showModal();
    }
  });
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "save") {
      setApiKey(input.value.trim());
      onKey();
    }
  });
}

async function start() {
  setUpTheme();
  const status = byId("boot-status");
  let started = false;
  const boot = async () => {
    let info;
    let examples;
    try {
      [info, examples] = await Promise.all([api("info"), fetch("examples.json").then((r) => r.json())]);
    } catch (error) {
      fill(status, h("div", { class: "status bad", role: "alert" },
        h("strong", {}, error.status === 401 ? "This gateway needs an API key: " : "The page could not start: "),
        error.message));
      if (error.status === 401) document.dispatchEvent(new CustomEvent("need-key"));
      return;
    }
    if (started) return;
    started = true;
    fill(status);
    byId("version").textContent = `deepseek-recipe ${info.version}`;
    const ctx = { info, examples };
    const views = {
      encode: encodeView(byId("panel-encode"), ctx),
      decode: decodeView(byId("panel-decode"), ctx),
      compare: compareView(byId("panel-compare"), ctx),
      cache: cacheView(byId("panel-cache"), ctx),
    };
    const first = { encode: "plain", decode: "tools", compare: "tools", cache: "next-turn" };
    const loaded = new Set();
    const show = (mode) => {
      if (!MODES.includes(mode)) mode = "encode";
      selectTab(byId(`tab-${mode}`));
      if (!loaded.has(mode)) {
        loaded.add(mode);
        views[mode].load(first[mode]);
      }
    };
    tablist(byId("modes"), (tab) => {
      const mode = tab.id.slice(4);
      history.replaceState(null, "", `#${mode}`);
      show(mode);
    });
    window.addEventListener("hashchange", () => show(location.hash.slice(1)));
    show(location.hash.slice(1));
    document.body.dataset.ready = "true";
  };
  setUpKey(boot);
  await boot();
}

start();
