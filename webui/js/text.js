// Offsets and pieces: the server speaks code points (prompt ranges) and UTF-8 bytes (token
// lengths); the DOM speaks UTF-16 code units. Pure functions, no DOM (tested with node --test).

/** UTF-8 length of the code point `cp`. */
export function utf8Length(cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/**
 * A function from code-point offsets of `text` to UTF-16 offsets (identity when `text` has
 * no characters outside the Basic Multilingual Plane).
 */
export function codePointToUnit(text) {
  if (!/[\uD800-\uDFFF]/.test(text)) return (cp) => cp;
  const units = [0];
  let unit = 0;
  for (const char of text) {
    unit += char.length;
    units.push(unit);
  }
  return (cp) => units[Math.min(cp, units.length - 1)];
}

/** `ranges` ([start, end) in code points) as UTF-16 ranges of `text`. */
export function rangesToUnits(text, ranges) {
  const toUnit = codePointToUnit(text);
  return ranges.map(([start, end]) => [toUnit(start), toUnit(end)]);
}

/**
 * Where each token lies in `text`, given the tokens' UTF-8 byte lengths (their bytes, in order,
 * spell the text). A character belongs to the token holding its first byte; a token that only
 * continues a character gets an empty span (its bytes still show on hover).
 *
 * Returns `{starts, ends, byteStarts}`: UTF-16 offsets per token, and each token's first byte
 * (plus the total at the end). Throws when the lengths do not add up to the text.
 */
export function tokenSpans(text, lengths) {
  const n = lengths.length;
  const starts = new Uint32Array(n);
  const ends = new Uint32Array(n);
  const byteStarts = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) byteStarts[i + 1] = byteStarts[i] + lengths[i];
  let token = 0;
  let byte = 0;
  let unit = 0;
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i);
    const width = cp > 0xffff ? 2 : 1;
    while (token < n && byteStarts[token + 1] <= byte) {
      ends[token] = unit;
      token++;
      if (token < n) starts[token] = unit;
    }
    byte += utf8Length(cp);
    unit += width;
    i += width;
  }
  if (byte !== (n ? byteStarts[n] : 0)) {
    throw new Error(`the tokens hold ${n ? byteStarts[n] : 0} bytes, the text ${byte}`);
  }
  for (; token < n; token++) {
    ends[token] = unit;
    if (token + 1 < n) starts[token + 1] = unit;
  }
  return { starts, ends, byteStarts };
}

/** The bytes as lowercase hex pairs separated by spaces. */
export function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
}

/** The window of `size` items (of `count`) that holds item `index`: `{start, end}`. */
export function windowAround(count, size, index) {
  if (count <= size) return { start: 0, end: count };
  const clamped = Math.max(0, Math.min(index, count - 1));
  const start = Math.floor(clamped / size) * size;
  return { start, end: Math.min(count, start + size) };
}

/**
 * The text between UTF-16 offsets `from` and `to`, cut into pieces at the marked ranges:
 * `[{text, kind, start}]` with kind `plain` or the range's kind. `marks` are
 * `[start, end, kind]` in UTF-16 offsets, sorted and disjoint.
 */
export function pieces(text, from, to, marks) {
  const out = [];
  let at = from;
  let i = firstEndingAfter(marks, from);
  for (; i < marks.length && marks[i][0] < to; i++) {
    const [start, end, kind] = marks[i];
    if (start > at) out.push({ text: text.slice(at, start), kind: "plain", start: at });
    const s = Math.max(start, from);
    const e = Math.min(end, to);
    if (e > s) out.push({ text: text.slice(s, e), kind, start: s });
    at = Math.max(at, e);
  }
  if (at < to) out.push({ text: text.slice(at, to), kind: "plain", start: at });
  return out;
}

/** Index of the first mark ending after `offset` (marks sorted by start, disjoint). */
export function firstEndingAfter(marks, offset) {
  let low = 0;
  let high = marks.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (marks[mid][1] <= offset) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** Merge two sorted lists of `[start, end, kind]` marks into one sorted list. */
export function mergeMarks(a, b) {
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i][0] <= b[j][0])) out.push(a[i++]);
    else out.push(b[j++]);
  }
  return out;
}

/** Whether UTF-16 range [start, end) overlaps any of `marks` (sorted, disjoint). */
export function overlaps(marks, start, end) {
  const i = firstEndingAfter(marks, start);
  return i < marks.length && marks[i][0] < Math.max(end, start + 1);
}

/** A token's text with invisible characters made visible (for token chips). */
export function visible(text) {
  return text.replace(/ /g, "·").replace(/\n/g, "↵").replace(/\t/g, "→").replace(/\r/g, "␍");
}

/** `n` with thousands separators (locale-independent). */
export function count(n) {
  return n == null ? "—" : String(n).replace(/\B(?=(\d{3})+(?!\d))/g, " ");
}
