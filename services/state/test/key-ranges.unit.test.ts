import { createHash } from "node:crypto";
import t from "tap";
import { readAllByNodeId, type PageAfter } from "../src/engine/key-ranges.js";

const nodeId = (seed: string) => createHash("sha256").update(seed).digest("hex").slice(0, 32);

/** A keyset-paged registry over `ids` (pages of up to 500), counting its calls and the most at once. */
function registry(ids: string[]) {
  const sorted = [...ids].sort();
  const stats = { calls: 0, concurrent: 0, maxConcurrent: 0 };
  const page: PageAfter<string> = async (cursor) => {
    stats.calls++;
    stats.concurrent++;
    stats.maxConcurrent = Math.max(stats.maxConcurrent, stats.concurrent);
    await new Promise((r) => setImmediate(r));
    stats.concurrent--;
    const from = sorted.filter((id) => id > cursor);
    const items = from.slice(0, 500);
    return { items, nextCursor: from.length > 500 ? items.at(-1)! : "" };
  };
  return { sorted, page, stats };
}

t.test("a small registry is one page", async (t) => {
  const r = registry(Array.from({ length: 120 }, (_, i) => nodeId(`a${i}`)));
  t.same(await readAllByNodeId(r.page, (id) => id), r.sorted);
  t.equal(r.stats.calls, 1);
});

t.test("a large registry is read in ranges at once: every id once, in key order", async (t) => {
  for (const n of [501, 1000, 2345, 10_000]) {
    const r = registry(Array.from({ length: n }, (_, i) => nodeId(`b${n}-${i}`)));
    const got = await readAllByNodeId(r.page, (id) => id);
    t.equal(got.length, n, `${n}: count`);
    t.same(got, r.sorted, `${n}: every id once, in order`);
    if (n >= 2345) t.ok(r.stats.maxConcurrent > 1, `${n}: pages read at once (${r.stats.maxConcurrent})`);
  }
});

t.test("ids crowded in one corner of the key space still come back whole", async (t) => {
  // All in the first 1/4096 of the space: the first page's density estimate is far off.
  const crowded = Array.from({ length: 3000 }, (_, i) => `000${nodeId(`c${i}`).slice(3)}`);
  // And the opposite: a sparse start, a dense end.
  const skewed = [
    ...Array.from({ length: 600 }, (_, i) => `0${nodeId(`d${i}`).slice(1)}`),
    ...Array.from({ length: 2500 }, (_, i) => `fff${nodeId(`e${i}`).slice(3)}`),
  ];
  for (const ids of [crowded, skewed]) {
    const r = registry(ids);
    t.same(await readAllByNodeId(r.page, (id) => id), r.sorted);
  }
});

t.test("keys that are not node ids are read page after page", async (t) => {
  const r = registry(Array.from({ length: 1200 }, (_, i) => `node-${String(i).padStart(5, "0")}`));
  t.same(await readAllByNodeId(r.page, (id) => id), r.sorted);
  t.equal(r.stats.maxConcurrent, 1);
});
