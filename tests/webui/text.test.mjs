// The page's offset arithmetic: code points, UTF-16 units and UTF-8 bytes.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  codePointToUnit,
  count,
  firstEndingAfter,
  hex,
  mergeMarks,
  overlaps,
  pieces,
  rangesToUnits,
  tokenSpans,
  utf8Length,
  visible,
  windowAround,
} from "../../webui/js/text.js";

const enc = new TextEncoder();

/** Split `text`'s UTF-8 at the given byte offsets: the lengths a tokenizer would report. */
function lengthsAt(text, cuts) {
  const total = enc.encode(text).length;
  const edges = [0, ...cuts, total];
  return edges.slice(1).map((e, i) => e - edges[i]);
}

test("utf8Length matches TextEncoder for every width", () => {
  for (const ch of ["a", "é", "｜", "😀"]) assert.equal(utf8Length(ch.codePointAt(0)), enc.encode(ch).length);
});

test("code points map to UTF-16 units around astral characters", () => {
  assert.equal(codePointToUnit("abc")(2), 2);
  const map = codePointToUnit("a😀b😀c");
  assert.deepEqual([0, 1, 2, 3, 4, 5].map(map), [0, 1, 3, 4, 6, 7]);
  assert.deepEqual(rangesToUnits("😀<｜User｜>", [[1, 9]]), [[2, 10]]);
});

test("token spans cover the text in order, whole tokens", () => {
  const text = "<｜User｜>Hello world";
  const lengths = lengthsAt(text, [enc.encode("<｜User｜>").length, enc.encode("<｜User｜>Hello").length]);
  const { starts, ends, byteStarts } = tokenSpans(text, lengths);
  assert.deepEqual([...starts], [0, 8, 13]);
  assert.deepEqual([...ends], [8, 13, 19]);
  assert.deepEqual([...byteStarts], [0, 12, 17, 23]);
  assert.deepEqual([...starts].map((s, i) => text.slice(s, ends[i])), ["<｜User｜>", "Hello", " world"]);
});

test("a token that only continues a character gets an empty span", () => {
  const text = "a｜b"; // ｜ is three bytes: cut after its first byte
  // Bytes: "a" | first byte of ｜ | the rest of ｜ and "b": the character goes where it starts.
  const { starts, ends } = tokenSpans(text, lengthsAt(text, [1, 2]));
  assert.deepEqual([...starts].map((s, i) => text.slice(s, ends[i])), ["a", "｜", "b"]);
  const cut = tokenSpans(text, lengthsAt(text, [1, 2, 3]));
  const texts = [...cut.starts].map((s, i) => text.slice(s, cut.ends[i]));
  assert.deepEqual(texts, ["a", "｜", "", "b"]);
});

test("astral characters split across tokens stay whole", () => {
  const text = "x😀y";
  const { starts, ends } = tokenSpans(text, lengthsAt(text, [1, 3, 5]));
  assert.deepEqual([...starts].map((s, i) => text.slice(s, ends[i])), ["x", "😀", "", "y"]);
});

test("lengths that do not spell the text are refused", () => {
  assert.throws(() => tokenSpans("abc", [1, 1]), /2 bytes, the text 3/);
  assert.deepEqual([...tokenSpans("", []).starts], []);
});

test("windows hold the index and never run past the end", () => {
  assert.deepEqual(windowAround(10, 100, 5), { start: 0, end: 10 });
  assert.deepEqual(windowAround(300_000, 2048, 4100), { start: 4096, end: 6144 });
  assert.deepEqual(windowAround(5000, 2048, 4999), { start: 4096, end: 5000 });
  assert.deepEqual(windowAround(5000, 2048, 99999), { start: 4096, end: 5000 });
});

test("pieces cut a window at marks, including marks that straddle its edges", () => {
  const text = "0123456789";
  const marks = [[2, 4, "special"], [6, 9, "lookalike"]];
  assert.deepEqual(pieces(text, 0, 10, marks).map((p) => [p.text, p.kind]), [
    ["01", "plain"], ["23", "special"], ["45", "plain"], ["678", "lookalike"], ["9", "plain"],
  ]);
  assert.deepEqual(pieces(text, 3, 7, marks).map((p) => [p.text, p.kind]), [
    ["3", "special"], ["45", "plain"], ["6", "lookalike"],
  ]);
  assert.equal(pieces(text, 0, 10, []).length, 1);
});

test("mark search, merge and overlap", () => {
  const marks = [[2, 4, "a"], [6, 9, "b"]];
  assert.equal(firstEndingAfter(marks, 0), 0);
  assert.equal(firstEndingAfter(marks, 4), 1);
  assert.equal(firstEndingAfter(marks, 9), 2);
  assert.deepEqual(mergeMarks([[0, 1, "s"], [5, 6, "s"]], [[2, 3, "l"]]).map((m) => m[0]), [0, 2, 5]);
  assert.equal(overlaps(marks, 3, 5), true);
  assert.equal(overlaps(marks, 4, 6), false);
  assert.equal(overlaps(marks, 8, 8), true); // an empty token inside a mark
});

test("display helpers", () => {
  assert.equal(hex(new Uint8Array([0, 15, 255])), "00 0f ff");
  assert.equal(visible(" a\n\tb"), "·a↵→b");
  assert.equal(count(1234567), "1 234 567");
  assert.equal(count(null), "—");
});
