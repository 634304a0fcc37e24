/**
 * npm run bench -- audit-decode [--events N] [--rounds R]: decodes N AuditEvents as audit ingest
 * does (every event it stores), R rounds, and prints events/s per round, the median and the best,
 * with the load average: the machine is shared, so compare runs made minutes apart, at a like load.
 * The events are the audit bench's ingest shape (refs, a one-number metadata) and a realistic mix
 * with larger metadata (selectors, lists, nested objects).
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { AuditEventSchema } from "@orch/contracts";
import { decodeAuditEvent } from "../services/audit/src/decode.js";
import { encodeEvent } from "./lib/audit-ingest.js";

const { values } = parseArgs({
  options: { events: { type: "string", default: "20000" }, rounds: { type: "string", default: "7" } },
});
const N = Number(values.events);
const ROUNDS = Number(values.rounds);

const ref = (i: number, type: string) => ({
  id: `${type}-${i.toString(16).padStart(8, "0")}`,
  name: `${type}-${i}`,
  type,
});
const ts = (i: number) => new Date(1_780_000_000_000 + i * 1000).toISOString();
const id = (i: number) => `01KB${i.toString(36).toUpperCase().padStart(22, "0")}`;

function events(): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < N; i++) {
    if (i % 2 === 0) {
      out.push(
        encodeEvent("state.apply.completed", {
          id: id(i),
          timestamp: ts(i),
          actor: ref(i, "agent"),
          target: ref(i % 50, "module"),
          n: i,
        }),
      );
      continue;
    }
    const metadata = {
      role: "operator",
      selector: "env=prod,role in (web,db)",
      modules: ["nginx", "postgres", `m-${i % 9}`],
      counts: { changed: i % 7, failed: 0, skipped: 3 },
      enforce: i % 3 === 0,
      note: null,
    };
    out.push(
      toBinary(
        AuditEventSchema,
        create(AuditEventSchema, {
          id: id(i),
          timestamp: ts(i),
          eventType: "assignment.created",
          severity: "info",
          summary: `assignment a-${i} (env=prod → nginx, postgres) created by alice`,
          actor: ref(i % 5, "operator"),
          target: ref(i, "assignment"),
          metadata,
        }),
      ),
    );
  }
  return out;
}

const input = events();
let sink = 0;
const rates: number[] = [];
// One warm-up round so that every round measures optimised code.
for (const b of input) sink += decodeAuditEvent(b).id.length;
for (let r = 0; r < ROUNDS; r++) {
  const t0 = process.hrtime.bigint();
  for (const b of input) sink += decodeAuditEvent(b).id.length;
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  rates.push(N / s);
  console.log(`round ${r + 1}: ${(N / s).toFixed(0).padStart(8)} events/s`);
}
const sorted = [...rates].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
const [l1, l5] = loadavg();
console.log(
  `audit decode, ${N} events: median ${median.toFixed(0)} events/s, best ${(sorted.at(-1) ?? 0).toFixed(0)} events/s` +
    `   (load average ${l1?.toFixed(2)} / ${l5?.toFixed(2)}; checksum ${sink})`,
);
