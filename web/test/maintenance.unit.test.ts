import t from "tap";
import { fromLocalInput, isActiveAt, phaseOf, spanError, toLocalInput } from "../src/lib/window-times.js";

t.test("a window is active from starts_at (inclusive) to ends_at (exclusive), in seconds", async (t) => {
  const w = { starts_at: 100, ends_at: 200 };
  t.equal(isActiveAt(w, 99_999), false);
  t.equal(isActiveAt(w, 100_000), true);
  t.equal(isActiveAt(w, 199_999), true);
  t.equal(isActiveAt(w, 200_000), false, "ended at ends_at");
  t.equal(phaseOf(w, 50_000), "upcoming");
  t.equal(phaseOf(w, 150_000), "active");
  t.equal(phaseOf(w, 200_000), "ended");
});

t.test("datetime-local round trip to the minute; blank and junk are no time", async (t) => {
  const ms = new Date(2031, 4, 6, 7, 8, 59).getTime();
  t.equal(toLocalInput(ms), "2031-05-06T07:08");
  t.equal(fromLocalInput("2031-05-06T07:08"), Math.floor(new Date(2031, 4, 6, 7, 8).getTime() / 1000));
  t.equal(fromLocalInput(""), undefined);
  t.equal(fromLocalInput("nope"), undefined);
  t.equal(spanError(undefined, 5), "Starts is required");
  t.equal(spanError(5, undefined), "Ends is required");
  t.equal(spanError(5, 5), "Ends must be after Starts");
  t.equal(spanError(5, 6), undefined);
});
