import t from "tap";
import { iso } from "../src/iso-time.js";

const native = (ms: number) => new Date(ms).toISOString();

t.test("iso() writes what toISOString writes", async (t) => {
  const edges = [
    0, 1, 999, 1000, 59_999, 86_399_999, 86_400_000, 951_782_400_000, 1_700_000_000_123, 253_402_300_799_999,
  ];
  for (const ms of edges) t.equal(iso(ms), native(ms), String(ms));
  // Many days (more than the kept prefixes) and every field width, from a fixed seed.
  let x = 12345;
  for (let i = 0; i < 20_000; i++) {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    const ms = Math.floor((x / 2_147_483_648) * 253_402_300_800_000);
    if (iso(ms) !== native(ms)) t.fail(`${ms}: ${iso(ms)} !== ${native(ms)}`);
  }
  // Twice over the same times: a kept day prefix gives the same text.
  for (const ms of edges) t.equal(iso(ms), native(ms), `${ms} again`);
});

t.test("values outside the fast path behave as toISOString", async (t) => {
  for (const ms of [-1, -86_400_001, 1.5, 253_402_300_800_000, 8.64e15]) t.equal(iso(ms), native(ms), String(ms));
  t.throws(() => iso(Number.NaN), RangeError);
  t.throws(() => iso(8.64e15 + 1), RangeError);
});
