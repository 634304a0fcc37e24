import t from "tap";
import { readFileSync } from "node:fs";
import { EVENT_TYPES, Severities } from "@orch/contracts";

const doc = readFileSync(new URL("../../../docs/events.md", import.meta.url), "utf8");
const documented = new Map([...doc.matchAll(/^\| `([a-z0-9_.]+)` \| (\w+) \|/gm)].map((m) => [m[1]!, m[2]!]));

t.test("docs/events.md lists exactly the catalogue, with the same severities", async (t) => {
  t.same([...documented.keys()].sort(), Object.keys(EVENT_TYPES).sort());
  for (const [type, { severity }] of Object.entries(EVENT_TYPES)) t.equal(documented.get(type), severity, type);
});

t.test("event types are dotted lower-case domain.action names with a known severity", async (t) => {
  for (const [type, { severity }] of Object.entries(EVENT_TYPES)) {
    t.match(type, /^[a-z][a-z_]*(\.[a-z_]+)+$/, type);
    t.ok((Severities as readonly string[]).includes(severity), `${type}: ${severity}`);
  }
});
