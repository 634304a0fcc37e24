import t from "tap";
import {
  type CacheEntry,
  chooseEvictions,
  PARTIAL_STALE_MS,
  PIN_MAX_MS,
  PIN_MIN_MS,
  pinnedHexes,
  pinUntil,
  type Shipment,
  shipmentOverCap,
} from "../src/blobs/evict.js";

// The cap's decisions as pure functions: what a pass deletes, what shipments pin, when a shipment
// cannot fit. The driver (cache.ts) against a real directory is blobs-cache-cap.test.ts.

const HOUR = 3_600_000;
const NOW = 100 * HOUR;
const blob = (hex: string, size: number, usedAt: number): CacheEntry => ({ hex, size, usedAt, partial: false });
const partial = (hex: string, size: number, usedAt: number): CacheEntry => ({ hex, size, usedAt, partial: true });
const hexes = (es: readonly CacheEntry[]) => es.map((e) => e.hex);
const choose = (entries: CacheEntry[], maxBytes: number, keep: string[] = []) =>
  chooseEvictions({ entries, maxBytes, now: NOW, keep: new Set(keep) });

t.test("unit: under the cap nothing goes; over it, least recently used first until it fits", async (t) => {
  const entries = [blob("c", 300, NOW - 1 * HOUR), blob("a", 300, NOW - 3 * HOUR), blob("b", 300, NOW - 2 * HOUR)];
  t.same(choose(entries, 900), { remove: [], stale: 0, totalBefore: 900, totalAfter: 900, overBy: 0 });
  const c = choose(entries, 800);
  t.same(hexes(c.remove), ["a"], "one is enough: the oldest");
  t.same([c.totalBefore, c.totalAfter, c.overBy], [900, 600, 0]);
  t.same(hexes(choose(entries, 500).remove), ["a", "b"], "oldest first, stops once under the cap");
  t.same(hexes(choose(entries, 1).remove), ["a", "b", "c"]);
});

t.test("unit: kept blobs (just completed, pinned) are never taken, even when they are the oldest", async (t) => {
  const entries = [blob("old", 300, NOW - 9 * HOUR), blob("mid", 300, NOW - 5 * HOUR), blob("new", 300, NOW)];
  const c = choose(entries, 600, ["old"]);
  t.same(hexes(c.remove), ["mid"], "the next least recently used goes instead");
  t.equal(c.overBy, 0);

  const all = choose(entries, 200, ["old", "new"]);
  t.same(hexes(all.remove), ["mid"]);
  t.same([all.totalAfter, all.overBy], [600, 400], "what is kept alone exceeds the cap: reported, not taken");
});

t.test("unit: partials count toward the total; a stale one is dropped whatever the cap", async (t) => {
  const entries = [
    blob("a", 300, NOW - 2 * HOUR),
    partial("p", 400, NOW - 1 * HOUR),
    partial("stale", 50, NOW - PARTIAL_STALE_MS - 1),
  ];
  const under = choose(entries, 10_000);
  t.same(hexes(under.remove), ["stale"], "a day-old partial goes even under the cap");
  t.same([under.stale, under.totalBefore, under.totalAfter], [1, 750, 700]);
  t.same(hexes(choose(entries, 0).remove), ["stale"], "0 = no cap: only stale partials go");

  const over = choose(entries, 500);
  t.same(hexes(over.remove), ["stale", "a"], "the partial's 400 bytes count: the older complete blob goes");
  t.equal(over.totalAfter, 400);
  t.same(hexes(choose(entries, 100).remove), ["stale", "a", "p"], "a fresh partial is evicted in LRU order too");
  t.same(hexes(choose(entries, 10_000, ["stale"]).remove), [], "a kept partial is not dropped, however old");
});

t.test("unit: equal use times break ties the same way every time (partials first, then by hex)", async (t) => {
  const entries = [blob("b", 1, NOW), blob("a", 1, NOW), partial("c", 1, NOW)];
  t.same(hexes(choose(entries, 1).remove), ["c", "a"]);
});

t.test("unit: pins last until the request's deadline, within [10 min, 24 h]", async (t) => {
  t.equal(pinUntil(NOW, NOW + 2 * HOUR), NOW + 2 * HOUR);
  t.equal(pinUntil(NOW, NOW + 30_000), NOW + PIN_MIN_MS, "a short (or skewed) deadline still covers the apply");
  t.equal(pinUntil(NOW, undefined), NOW + PIN_MIN_MS);
  t.equal(pinUntil(NOW, NOW + 48 * HOUR), NOW + PIN_MAX_MS);

  const shipments: Shipment[] = [
    { until: NOW + 1, sizes: new Map([["a", 1]]) },
    { until: NOW, sizes: new Map([["gone", 1]]) },
    { until: NOW + HOUR, sizes: new Map<string, number | undefined>([["b", undefined]]) },
  ];
  t.same([...pinnedHexes(shipments, NOW)].sort(), ["a", "b"], "an expired shipment pins nothing");
});

t.test("unit: a shipment whose known blobs exceed the cap is over it; sizes fill in as blobs arrive", async (t) => {
  const s: Shipment = {
    until: NOW + HOUR,
    sizes: new Map<string, number | undefined>([
      ["cached", 400],
      ["x", undefined],
      ["y", undefined],
    ]),
  };
  t.equal(shipmentOverCap([s], NOW, "x", 500, 1000), undefined, "400 + 500 fits");
  t.equal(s.sizes.get("x"), 500, "x's size is recorded");
  t.equal(shipmentOverCap([s], NOW, "y", 200, 1000), 1100, "400 + 500 + 200 does not");
  t.equal(shipmentOverCap([s], NOW, "y", 200, 0), undefined, "no cap, no limit");
  t.equal(shipmentOverCap([s], NOW + 2 * HOUR, "y", 200, 1000), undefined, "an expired shipment: y is alone");
  t.equal(shipmentOverCap([], NOW, "z", 1001, 1000), 1001, "a blob no shipment names is checked alone");
  t.equal(shipmentOverCap([], NOW, "z", 1000, 1000), undefined);
});
