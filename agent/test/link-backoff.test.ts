import t from "tap";
import { backoffDelay, LINK_BACKOFF } from "../src/link/backoff.js";

t.test("unit: full-jitter backoff doubles its ceiling from 0.5 s up to the 30 s cap", async (t) => {
  const ceil = (n: number) => backoffDelay(n, { ...LINK_BACKOFF, random: () => 0.999999 });
  t.same([0, 1, 2, 3, 4, 5, 6, 7, 20].map(ceil), [499, 999, 1999, 3999, 7999, 15999, 29999, 29999, 29999]);
  t.equal(backoffDelay(3, { ...LINK_BACKOFF, random: () => 0 }), 0, "the floor is zero (full jitter)");
  t.equal(backoffDelay(1000, { ...LINK_BACKOFF, random: () => 0.5 }), 15000, "huge attempt counts stay capped");
});

t.test("unit: delays are spread over the whole window (no herd)", async (t) => {
  const xs = Array.from({ length: 2000 }, () => backoffDelay(6));
  t.ok(
    xs.every((x) => x >= 0 && x < 30_000),
    "all inside [0, cap)",
  );
  const buckets = [0, 0, 0, 0];
  for (const x of xs) buckets[Math.floor(x / 7500)]!++;
  t.ok(
    buckets.every((b) => b > 300),
    `each quarter of the window is used: ${buckets.join(",")}`,
  );
  t.ok(new Set(xs).size > 1500, "agents pick different delays");
});
