// Editing requests and reading typed ids; laying out KV blocks.
import assert from "node:assert/strict";
import { test } from "node:test";

import { around, blockCells, percent } from "../../webui/js/blocks.js";
import { field, parseIds, pretty, withField } from "../../webui/js/jsonedit.js";

test("the model field is read and replaced, other fields kept", () => {
  const text = pretty({ model: "DeepSeek-V4-Pro", messages: [] });
  assert.equal(field(text, "model"), "DeepSeek-V4-Pro");
  const edited = withField(text, "model", "DeepSeek-V4.1-Flash");
  assert.deepEqual(JSON.parse(edited.text), { model: "DeepSeek-V4.1-Flash", messages: [] });
  assert.ok(withField("{nope", "model", "x").error);
  assert.ok(withField("[1]", "model", "x").error);
  assert.equal(field("[1]", "model"), null);
});

test("ids typed in any common way", () => {
  assert.deepEqual(parseIds("1 2  3"), { ids: [1, 2, 3] });
  assert.deepEqual(parseIds("[1, 2,\n3]"), { ids: [1, 2, 3] });
  assert.deepEqual(parseIds("  "), { ids: [] });
  assert.match(parseIds("1 two").error, /two/);
  assert.match(parseIds("-1").error, /-1/);
});

test("blocks: shared, then the diverged one, then partial or one-sided", () => {
  const cells = blockCells(668, 777, 128, 5);
  assert.deepEqual(cells.map((c) => c.state), ["shared", "shared", "shared", "shared", "shared", "partial", "partial"]);
  assert.deepEqual([cells[5].from, cells[5].to, cells[6].to], [640, 768, 777]);
  assert.deepEqual(blockCells(300, 300, 128, 0).map((c) => c.state), ["diverged", "diverged", "partial"]);
  assert.deepEqual(blockCells(128, 512, 128, 1).map((c) => c.state), ["shared", "b-only", "b-only", "b-only"]);
  assert.deepEqual(blockCells(0, 0, 128, 0), []);
});

test("context windows and percentages", () => {
  assert.deepEqual(around(5, 12, 100), { from: 0, to: 18 });
  assert.deepEqual(around(95, 12, 100), { from: 83, to: 100 });
  assert.equal(percent(640, 777), "82%");
  assert.equal(percent(1, 0), "0%");
});
