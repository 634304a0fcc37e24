import t from "tap";
import { parseExpiry, parseTags, restrictionOf } from "../src/pages/secrets/restriction.js";

t.test("tags: k=v lists by comma or line; blank is none; errors name the part", async (t) => {
  t.same(parseTags(""), { ok: true, tags: {} });
  t.same(parseTags(" env=prod, role = web\nteam/app=x "), {
    ok: true,
    tags: { env: "prod", role: "web", "team/app": "x" },
  });
  t.same(parseTags("env="), { ok: true, tags: { env: "" } }, "an empty value is a value");
  const noEq = parseTags("env");
  t.equal(noEq.ok, false);
  if (!noEq.ok) t.match(noEq.message, /"env" is not key=value/);
  const badKey = parseTags("Env=x");
  t.equal(badKey.ok, false);
  if (!badKey.ok) t.match(badKey.message, /^Tag key "Env" must be/);
  const twice = parseTags("a=1,a=2");
  t.equal(twice.ok, false);
  if (!twice.ok) t.match(twice.message, /given twice/);
});

t.test("restriction: null without agents and tags, else both lists as given", async (t) => {
  t.equal(restrictionOf([], {}), null);
  t.same(restrictionOf(["a".repeat(32)], {}), { node_ids: ["a".repeat(32)], tags: {} });
  t.same(restrictionOf([], { env: "prod" }), { node_ids: [], tags: { env: "prod" } });
});

t.test("expiry: blank never expires, local time becomes UTC RFC 3339, the past is refused", async (t) => {
  const now = Date.parse("2030-01-01T00:00:00Z");
  t.same(parseExpiry("", now), { ok: true, expiresAt: null });
  const later = parseExpiry("2030-06-01T12:30", now);
  t.equal(later.ok, true);
  if (later.ok) t.equal(later.expiresAt, new Date("2030-06-01T12:30").toISOString());
  const past = parseExpiry("2020-01-01T00:00", now);
  t.equal(past.ok, false);
  if (!past.ok) t.match(past.message, /future/);
  t.equal(parseExpiry("not a date", now).ok, false);
});
