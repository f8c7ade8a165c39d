// The page's JSON API (relative to the page: /webui/api/...), with the gateway's API key when
// one is set. The key lives in this tab's session storage only.

const KEY = "deepseek-recipe.api-key";

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export function apiKey() {
  try {
    return sessionStorage.getItem(KEY) ?? "";
  } catch {
    return "";
  }
}

export function setApiKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY, key);
    else sessionStorage.removeItem(KEY);
  } catch {
    // storage refused (private mode): the key lasts until the page reloads
  }
  memory = key;
}

let memory = "";

/** GET `api/<name>` (no payload) or POST it as JSON; resolves to the answer's JSON. */
export async function api(name, payload) {
  const headers = { accept: "application/json" };
  const key = apiKey() || memory;
  if (key) headers.authorization = `Bearer ${key}`;
  const init = { method: payload === undefined ? "GET" : "POST", headers };
  if (payload !== undefined) {
    headers["content-type"] = "application/json";
    init.body = JSON.stringify(payload);
  }
  const response = await fetch(`api/${name}`, init);
  const text = await response.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = { error: { message: text.slice(0, 300) || `HTTP ${response.status}` } };
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}
