// The KV-block picture of two prompts. Pure functions (tested with node --test): the server
// computed the shared prefix; this only lays the blocks out.

/**
 * One cell per block of the longer prompt: `{index, from, to, state}` where `from`/`to` are
 * token offsets and state is `shared` (full, same ids in both: reusable), `diverged` (the
 * block holding the first differing token, and every later one present in both), `partial`
 * (a last block not yet full: never cached), or `a-only` / `b-only` (past the other's end).
 */
export function blockCells(lengthA, lengthB, size, sharedBlocks) {
  const longest = Math.max(lengthA, lengthB);
  const cells = [];
  for (let index = 0, from = 0; from < longest; index++, from += size) {
    const to = Math.min(from + size, longest);
    const fullA = from + size <= lengthA;
    const fullB = from + size <= lengthB;
    let state;
    if (index < sharedBlocks) state = "shared";
    else if (from >= lengthA) state = fullB ? "b-only" : "partial";
    else if (from >= lengthB) state = fullA ? "a-only" : "partial";
    else if (!fullA || !fullB) state = "partial";
    else state = "diverged";
    cells.push({ index, from, to, state });
  }
  return cells;
}

/** The token indices `[from, to)` around `index`: `radius` before and after, clamped. */
export function around(index, radius, length) {
  return { from: Math.max(0, index - radius), to: Math.min(length, index + radius + 1) };
}

/** The share of `part` in `whole` as a whole percentage ("0%" for an empty whole). */
export function percent(part, whole) {
  return whole ? `${Math.floor((100 * part) / whole)}%` : "0%";
}
