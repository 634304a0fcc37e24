import t from "tap";
import { relativeTime, toMs } from "../src/ui/relative-time.js";

const NOW = Date.parse("2026-01-15T12:00:00Z");

t.test("relativeTime picks the largest whole unit", async (t) => {
  t.equal(relativeTime(NOW, NOW), "just now");
  t.equal(relativeTime(NOW - 5_000, NOW), "just now");
  t.equal(relativeTime(NOW - 45_000, NOW), "45 sec. ago");
  t.equal(relativeTime(NOW - 5 * 60_000, NOW), "5 min. ago");
  t.equal(relativeTime(NOW - 3 * 3600_000, NOW), "3 hr. ago");
  t.equal(relativeTime(NOW - 24 * 3600_000, NOW), "yesterday");
  t.equal(relativeTime(NOW + 2 * 3600_000, NOW), "in 2 hr.");
  t.equal(relativeTime(NOW - 400 * 24 * 3600_000, NOW), "last yr.");
});

t.test("toMs accepts the API's ISO strings and epoch milliseconds", async (t) => {
  t.equal(toMs("2026-01-15T12:00:00.000Z"), NOW);
  t.equal(toMs(NOW), NOW);
  t.equal(toMs(new Date(NOW)), NOW);
  t.equal(toMs(null), undefined);
  t.equal(toMs(undefined), undefined);
  t.equal(toMs(""), undefined);
  t.equal(toMs("not a date"), undefined);
});
