// The monitoring component (deploy/k8s/components/monitoring): promtool accepts the alerting rules
// and the dashboard's queries, every metric they use exists on a running system (all services and
// an orch-agent with --metrics-listen, scraped over HTTP), every metric of the catalogue
// (packages/kit/src/metrics/names.ts) is exposed by some process, the scrape configs select the
// services' metrics ports, and every alert has its runbook section in docs/observability.md.
// Needs `npm run build` (dist/main.js of the services and of agent/) and promtool (/usr/bin/promtool).
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { stringify as stringifyYaml } from "yaml";
import { METRICS } from "@orch/kit/metrics";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../services/agents/test/harness.js";
import { type K8sObject, kustomizeBuild, parseObjects, repoPath } from "./deploy/lib/kustomize.js";
import { selects } from "./deploy/lib/refs.js";
import { validateCustom } from "./deploy/lib/schemas.js";

const run = promisify(execFile);
const PROMTOOL = process.env.PROMTOOL_BIN ?? "/usr/bin/promtool";
const COMPONENT = "deploy/k8s/components/monitoring";
const RUNBOOKS = "docs/observability.md";
const SERVICES = ["auth", "agents", "secrets", "state", "notify", "audit", "terminal", "gateway"];

// ---- PromQL: which metric names does an expression read? ----

/** Words that are PromQL syntax, not metric names, when not followed by "(". */
const KEYWORDS = new Set([
  "and",
  "or",
  "unless",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "offset",
  "bool",
  "inf",
  "nan",
]);

/**
 * The metric names an expression selects. Strings, label matchers {…}, ranges […] and the label
 * lists of by/without/on/ignoring/group_left/group_right go first; of the identifiers left, those
 * followed by "(" are functions or aggregations and the rest that are not keywords are metrics.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^{}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w:.$])[a-zA-Z_:][\w:]*(?!\s*\()/g)) {
    // An identifier cut short by the lookahead (`su` of `sum (`) is followed by a word character.
    const next = bare[m.index + m[0].length];
    if (next && /[\w:]/.test(next)) continue;
    if (!KEYWORDS.has(m[0].toLowerCase())) names.add(m[0]);
  }
  return [...names].sort();
}

/** Exposition families by name → type, from the `# TYPE` lines of a /metrics answer. */
function families(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** A referenced series name is exposed: itself, or a histogram/summary's _bucket/_sum/_count. */
function exposed(name: string, all: Map<string, string>): boolean {
  if (all.has(name)) return true;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  const type = m ? all.get(m[1]!) : undefined;
  return type === "histogram" || (type === "summary" && m![2] !== "bucket");
}

// ---- What the component ships ----

const componentFile = (f: string) => readFileSync(repoPath(COMPONENT, f), "utf8");
const ruleObject = parseObjects(componentFile("prometheusrule.yaml"), "prometheusrule.yaml")[0]!;
const podMonitor = parseObjects(componentFile("podmonitor.yaml"), "podmonitor.yaml")[0]!;
const dashboardText = componentFile("dashboards/orch.json");
const dashboard = JSON.parse(dashboardText);

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules: Rule[] = ruleObject.spec.groups.flatMap((g: { rules: Rule[] }) => g.rules);
const alerts = rules.filter((r) => r.alert);
const panels: any[] = dashboard.panels.flatMap((p: any) => [p, ...(p.panels ?? [])]);
const dashboardExprs: Array<{ panel: string; expr: string }> = panels.flatMap((p) =>
  (p.targets ?? []).map((x: { expr: string }) => ({ panel: p.title, expr: x.expr })),
);
/** Grafana's variables replaced by values PromQL parses. */
const concrete = (expr: string) =>
  expr.replace(/\$__rate_interval|\$__interval|\$__range/g, "5m").replace(/\$\{?\w+\}?/g, ".+");

async function promtool(args: string[]): Promise<{ code: number; out: string }> {
  return run(PROMTOOL, args).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e) => {
      if (e.code === "ENOENT") throw new Error(`${PROMTOOL} is missing: install promtool (Debian package prometheus)`);
      return { code: e.code as number, out: `${e.stdout}${e.stderr}` };
    },
  );
}

const tmp = mkdtempSync(join(tmpdir(), "orch-monitoring-"));
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
const rulesFile = (name: string, groups: unknown) => {
  const path = join(tmp, name);
  writeFileSync(path, stringifyYaml({ groups }));
  return path;
};

t.test("metricNames finds metrics, not functions, keywords or labels", async (t) => {
  t.same(
    metricNames(
      'sum by (namespace, le) (rate(a_bucket{x="y{z}", route=~"/b[c]"}[5m])) / on (ns) group_left(pod) b offset 1h > bool 0.5',
    ),
    ["a_bucket", "b"],
  );
  t.same(metricNames("histogram_quantile(0.99, sum without (pod) (rate(c[$__rate_interval])))"), ["c"]);
  t.same(metricNames("d == 0 and on (instance) (time() - e > 1800) or f unless g"), ["d", "e", "f", "g"]);
  t.same(metricNames('topk(10, h) * 1e3 + count(i{a="and"}) by (a)'), ["h", "i"]);
});

t.test("promtool accepts the alerting rules", async (t) => {
  const ok = await promtool(["check", "rules", rulesFile("rules.yaml", ruleObject.spec.groups)]);
  t.equal(ok.code, 0, ok.out.trim());
  t.match(ok.out, new RegExp(`SUCCESS: ${rules.length} rules found`));

  // The check fires: a broken expression is refused.
  const broken = structuredClone(ruleObject.spec.groups);
  broken[0].rules[0].expr = "sum(rate(orch_http_requests_total[5m]) > ";
  const bad = await promtool(["check", "rules", rulesFile("broken.yaml", broken)]);
  t.not(bad.code, 0, "a broken expression fails the check");
});

t.test("promtool parses every dashboard query", async (t) => {
  t.ok(dashboardExprs.length >= 20, `${dashboardExprs.length} queries`);
  const groups = [
    {
      name: "dashboard",
      rules: dashboardExprs.map((q, i) => ({ alert: `panel_${i}`, expr: concrete(q.expr) })),
    },
  ];
  const ok = await promtool(["check", "rules", rulesFile("dashboard.yaml", groups)]);
  t.equal(ok.code, 0, ok.out.trim());
});

t.test("alerts: severity, summary, description and a runbook section each", async (t) => {
  const docs = readFileSync(repoPath(RUNBOOKS), "utf8");
  t.same(
    alerts.map((a) => a.alert),
    [
      "OrchGatewayErrorRatioHigh",
      "OrchBusLatencyHigh",
      "OrchOutboxBacklogGrowing",
      "OrchConsumerLagging",
      "OrchAgentsDisconnected",
      "OrchAgentsReplicaWithoutLinks",
      "OrchDeliveriesFailing",
    ],
  );
  for (const a of alerts) {
    t.match(a.labels?.severity, /^(critical|warning)$/, `${a.alert}: severity`);
    t.ok(a.annotations?.summary, `${a.alert}: summary`);
    t.ok(a.annotations?.description, `${a.alert}: description`);
    t.ok(a.for, `${a.alert}: holds for a while before firing`);
    t.equal(a.annotations?.runbook_url, `${RUNBOOKS}#alert-${a.alert!.toLowerCase()}`, `${a.alert}: runbook_url`);
    t.match(docs, new RegExp(`^### alert-${a.alert}$`, "m"), `${a.alert}: docs/observability.md has its section`);
  }
});

t.test("dashboard: grafana.com schema, datasource variable, the rows", async (t) => {
  t.same(
    dashboard.__inputs.map((i: any) => [i.name, i.type, i.pluginId]),
    [["DS_PROMETHEUS", "datasource", "prometheus"]],
  );
  const dsVar = dashboard.templating.list.find((v: any) => v.name === "DS_PROMETHEUS");
  t.equal(dsVar?.type, "datasource", "a DS_PROMETHEUS datasource variable (provisioned dashboards)");
  t.equal(dsVar?.query, "prometheus");
  const rows = panels.filter((p) => p.type === "row").map((p) => p.title);
  t.same(rows.slice(0, 6), ["Fleet", "API", "Bus", "Audit pipeline", "Deliveries", "Terminal sessions"]);
  const ids = panels.map((p) => p.id);
  t.same(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    [],
    "panel ids unique",
  );
  for (const p of panels.filter((x) => x.type !== "row")) {
    t.same(p.datasource, { type: "prometheus", uid: "${DS_PROMETHEUS}" }, `${p.title}: datasource`);
    t.ok(p.targets?.length, `${p.title}: has queries`);
    for (const x of p.targets) t.equal(x.datasource?.uid, "${DS_PROMETHEUS}", `${p.title} ${x.refId}: datasource`);
    t.ok(p.gridPos.x + p.gridPos.w <= 24, `${p.title}: fits the grid`);
  }
});

t.test("prod overlay: ServiceMonitor, rules and dashboard, aimed at the services", async (t) => {
  const objs = await kustomizeBuild("deploy/k8s/overlays/prod");
  const find = (kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);
  const sm = find("ServiceMonitor", "orch")!;
  t.ok(sm, "ServiceMonitor orch");
  t.ok(find("PrometheusRule", "orch"), "PrometheusRule orch");
  t.notOk(find("PodMonitor", "orch"), "no PodMonitor next to the ServiceMonitor (double scrapes)");
  const cm = find("ConfigMap", "orch-grafana-dashboard")!;
  t.equal(cm?.metadata.labels?.grafana_dashboard, "1", "dashboard ConfigMap labelled for the Grafana sidecar");
  t.equal(cm.data?.["orch.json"], dashboardText, "carries the dashboard JSON");

  const deployments = objs.filter(
    (o) => o.kind === "Deployment" && o.metadata.labels?.["app.kubernetes.io/part-of"] === "orch",
  );
  const port = sm.spec.endpoints[0].port as string;
  const scraped = objs.filter(
    (o) =>
      o.kind === "Service" &&
      selects(sm.spec.selector, o.metadata.labels) &&
      o.spec.ports.some((p: any) => p.name === port),
  );
  for (const d of deployments) {
    const labels = d.spec.template.metadata.labels;
    const svc = scraped.find((s) => selects(s.spec.selector, labels));
    t.ok(svc, `${d.metadata.name}: a Service with port "${port}" is scraped`);
    const target = svc?.spec.ports.find((p: any) => p.name === port).targetPort;
    const container = d.spec.template.spec.containers.find((c: any) => c.name === "orch");
    t.ok(
      container.ports.some((p: any) => p.name === target && p.containerPort === 9090),
      `${d.metadata.name}: the port leads to the health server (9090)`,
    );

    // The alternative: the PodMonitor selects the same pods and names their health port.
    t.ok(selects(podMonitor.spec.selector, labels), `${d.metadata.name}: PodMonitor selects its pods`);
    t.ok(
      container.ports.some((p: any) => p.name === podMonitor.spec.podMetricsEndpoints[0].port),
      `${d.metadata.name}: PodMonitor port exists`,
    );
  }
  t.same(validateCustom([podMonitor]), [], "PodMonitor matches its schema");

  // The schemas catch a misspelt field in each kind.
  const bad = structuredClone([sm, podMonitor, find("PrometheusRule", "orch")!]) as K8sObject[];
  bad[0]!.spec.endpoints[0].honourLabels = true;
  bad[1]!.spec.podMetricsEndpoints[0].intervall = "30s";
  bad[2]!.spec.groups[0].rules[0].anotations = {};
  const problems = validateCustom(bad).map((p) => `${p.object} ${p.message}`);
  for (const field of ["honourLabels", "intervall", "anotations"])
    t.ok(
      problems.some((p) => p.includes(field)),
      `misspelt ${field} reported`,
    );
});

t.test("every metric the rules, the dashboard and the catalogue name exists on a running system", async (t) => {
  const nats = await startNats();
  const db = await createTestDatabase();
  const linkPort = await freePort();
  const healthPorts = Object.fromEntries(await Promise.all(SERVICES.map(async (s) => [s, await freePort()] as const)));
  const transcripts = mkdtempSync(join(tmpdir(), "orch-monitoring-transcripts-"));
  const system = await startSystem({
    nats,
    db,
    services: SERVICES,
    env: {
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
      ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 5).toString("base64")}`,
      ORCH_TERMINAL_TRANSCRIPT_DIR: transcripts,
    },
    serviceEnv: (name) => ({ ORCH_HEALTH_PORT: String(healthPorts[name]) }),
  });
  const agents = agentPool();
  t.teardown(async () => {
    await agents.stop();
    await system.stop();
    await db.drop();
    await nats.stop();
    rmSync(transcripts, { recursive: true, force: true });
  });
  const agentMetricsPort = await freePort();
  const agent = agents.spawn([
    "--server",
    `127.0.0.1:${linkPort}`,
    "--metrics-listen",
    `127.0.0.1:${agentMetricsPort}`,
  ]);
  await agent.nodeId();

  const scrape = async (port: number) => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    if (res.status !== 200) throw new Error(`GET :${port}/metrics answered ${res.status}`);
    return families(await res.text());
  };
  const byProcess = new Map<string, Map<string, string>>();
  for (const s of SERVICES) byProcess.set(s, await scrape(healthPorts[s]!));
  byProcess.set("orch-agent", await eventually(() => scrape(agentMetricsPort).catch(() => undefined), 20_000));
  const all = new Map<string, string>();
  for (const f of byProcess.values()) for (const [name, type] of f) all.set(name, type);
  for (const [name, f] of byProcess) t.ok(f.size > 0, `${name}: /metrics answers with metric families`);

  const used = new Map<string, string[]>();
  const note = (name: string, where: string) => used.set(name, [...(used.get(name) ?? []), where]);
  for (const r of rules) for (const n of metricNames(r.expr)) note(n, `rule ${r.alert ?? r.record}`);
  for (const q of dashboardExprs) for (const n of metricNames(q.expr)) note(n, `panel "${q.panel}"`);
  t.ok(used.size >= 15, `${used.size} metric names used by rules and dashboard`);
  const missing = [...used].filter(([n]) => !exposed(n, all)).map(([n, where]) => `${n} (${where.join(", ")})`);
  t.same(missing, [], "no rule or panel reads a metric no process exposes");

  const notExposed = Object.keys(METRICS).filter((n) => !all.has(n));
  t.same(notExposed, [], "every catalogue metric is exposed by some process");
  for (const [name, spec] of Object.entries(METRICS))
    if (all.has(name)) t.equal(all.get(name), spec.type, `${name}: exposed as a ${spec.type}`);
});
