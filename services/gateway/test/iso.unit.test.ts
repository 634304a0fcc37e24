import t from "tap";
import { iso } from "../src/schemas.js";

// iso() formats without a Date object; it must give toISOString's string, or its error.
const viaDate = (ms: number) => {
  try {
    return new Date(ms).toISOString();
  } catch (err) {
    return `throws ${(err as Error).name}`;
  }
};
const viaIso = (ms: number) => {
  try {
    return iso(ms);
  } catch (err) {
    return `throws ${(err as Error).name}`;
  }
};

t.test("same string as Date#toISOString around every day boundary of 1970–9999 and at the edges", async (t) => {
  let differ = 0;
  const DAY = 86_400_000;
  for (let d = 0; d <= 2_932_896; d++) {
    for (const ms of [d * DAY, d * DAY + 43_199_999, (d + 1) * DAY - 1]) if (viaIso(ms) !== viaDate(ms)) differ++;
  }
  for (const ms of [-1, -62198755200000, 1.5, 253402300799999, 253402300800000, 8.64e15, 8.64e15 + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
    t.equal(viaIso(ms), viaDate(ms), String(ms));
  }
  t.equal(differ, 0);
});
