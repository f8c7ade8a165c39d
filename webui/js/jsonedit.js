// Small edits to the request JSON in an editor. Pure functions (tested with node --test).

/** `text` parsed, or `{error}` with the parser's message. */
export function parse(text) {
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: e.message };
  }
}

/** A JSON value as the editors show it (two-space indentation). */
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/** The top-level string field `key` of the request in `text`, or null. */
export function field(text, key) {
  const { value } = parse(text);
  return value && typeof value === "object" && !Array.isArray(value) && typeof value[key] === "string"
    ? value[key]
    : null;
}

/**
 * `text` with the top-level `key` set to `value` (re-indented), or `{error}` when `text` is
 * not a JSON object.
 */
export function withField(text, key, value) {
  const parsed = parse(text);
  if (parsed.error) return { error: parsed.error };
  const object = parsed.value;
  if (!object || typeof object !== "object" || Array.isArray(object)) return { error: "the request is not a JSON object" };
  return { text: pretty({ ...object, [key]: value }) };
}

/**
 * Token ids typed by a person: numbers separated by spaces, commas or newlines, optionally in
 * brackets. Returns `{ids}` or `{error}`.
 */
export function parseIds(text) {
  const trimmed = text.trim().replace(/^\[/, "").replace(/\]$/, "");
  if (!trimmed) return { ids: [] };
  const parts = trimmed.split(/[\s,]+/).filter(Boolean);
  const ids = [];
  for (const part of parts) {
    if (!/^\d+$/.test(part)) return { error: `not a token id: ${part.slice(0, 20)}` };
    ids.push(Number(part));
  }
  return { ids };
}
