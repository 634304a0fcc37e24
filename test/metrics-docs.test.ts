import { readFileSync } from "node:fs";
import { bounded, METRICS, metric } from "@orch/kit";
import { Registry } from "prom-client";
import t from "tap";
import { OBSERVABILITY_DOC, renderObservabilityDoc } from "../scripts/gen-metrics-docs.ts";

t.test("docs/observability.md lists the catalogue exactly as names.ts defines it", async (t) => {
  const doc = readFileSync(OBSERVABILITY_DOC, "utf8");
  t.equal(doc, renderObservabilityDoc(doc), "run `npx tsx scripts/gen-metrics-docs.ts`");
  for (const name of Object.keys(METRICS)) t.match(doc, `| \`${name}\` |`);
});

t.test("names follow Prometheus conventions; labels never carry ids", async (t) => {
  for (const [name, m] of Object.entries(METRICS)) {
    t.match(name, /^orch_[a-z_]+$/, name);
    if (m.type === "counter") t.match(name, /_total$/, `${name}: counters end in _total`);
    if (m.type === "histogram") t.match(name, /_seconds$/, `${name}: histograms are durations in seconds`);
    for (const l of m.labels) t.notMatch(l, /(^|_)id$/, `${name}: label ${l}`);
  }
});

t.test("metric() creates each catalogue metric once per registry, with its type and labels", async (t) => {
  const r = new Registry();
  for (const name of Object.keys(METRICS) as Array<keyof typeof METRICS>)
    t.equal(metric(r, name), metric(r, name), `${name} is idempotent`);
  const text = await r.metrics();
  for (const [name, m] of Object.entries(METRICS)) {
    t.match(text, `# HELP ${name} ${m.help}\n`);
    t.match(text, `# TYPE ${name} ${m.type}\n`);
  }
  t.equal(bounded("slack", ["slack", "webhook"]), "slack");
  t.equal(bounded("01HZZ", ["slack", "webhook"]), "other");
});
