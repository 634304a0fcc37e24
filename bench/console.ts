/**
 * npm run bench -- console [--agents 5000] [--screens 20] [--skip-fleet] [--plan-agents 500]
 *   [--plan-resources 20] [--skip-plan] [--terminal-samples 1000]
 *
 * (a) The first page's JavaScript, gzipped: web/dist/.vite/manifest.json's entry chunk and its
 *     static imports (dynamic imports = lazy routes are not part of it), against the 200 KB budget.
 * (b) Fleet with N simulated agents (bench/lib/sim-agent.ts, as bench/agents.ts): auth, agents,
 *     notify and gateway as real processes, all agents approved over the agents RPC, the console
 *     opened in headless Chromium: the page's own `fleet:data` → `fleet:painted` measure, then
 *     scrolling the virtual list with the mouse wheel while sampling requestAnimationFrame deltas.
 * (c) The plan view: a synthetic plan run of --plan-agents × --plan-resources file diffs served to
 *     the real run page through Playwright routes (run, stream, results pages), the page's own
 *     `plan:data` (all results in hand) → `plan:painted` (a frame after the commit that rendered
 *     them) measure; budget < 1 s. Auth, notify and gateway run for real (sign-in, the shell).
 * (d) The browser terminal's keystroke echo, --terminal-samples keys (bench/lib/console-terminal.ts).
 * Figures are printed, never asserted. Needs `npm run build` (services and web/dist).
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { createTestDatabase, freePort, startNats, startSystem } from "@orch/kit/testing";
import { launchBrowser } from "../test/e2e/lib/browser.js";
import { approveAll, startSimFleet, type SimFleet } from "./lib/sim-fleet.js";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const DIST = `${ROOT}web/dist/`;
const BUDGET_KB = 200;

const { values } = parseArgs({
  options: {
    agents: { type: "string", default: "5000" },
    screens: { type: "string", default: "20" },
    "skip-fleet": { type: "boolean", default: false },
    "plan-agents": { type: "string", default: "500" },
    "plan-resources": { type: "string", default: "20" },
    "skip-plan": { type: "boolean", default: false },
    "terminal-samples": { type: "string", default: "1000" },
  },
});
const agentCount = Number(values.agents);
const screens = Number(values.screens);
if (!Number.isInteger(agentCount) || agentCount < 1 || agentCount > 50_000) fail("--agents must be 1..50000");
if (!Number.isInteger(screens) || screens < 1 || screens > 1000) fail("--screens must be 1..1000");
const planAgents = Number(values["plan-agents"]);
const planResources = Number(values["plan-resources"]);
if (!Number.isInteger(planAgents) || planAgents < 1 || planAgents > 10_000) fail("--plan-agents must be 1..10000");
if (!Number.isInteger(planResources) || planResources < 1 || planResources > 500)
  fail("--plan-resources must be 1..500");
const terminalSamples = Number(values["terminal-samples"]);
if (!Number.isInteger(terminalSamples) || terminalSamples < 1 || terminalSamples > 100_000)
  fail("--terminal-samples must be 1..100000");

function fail(msg: string): never {
  console.error(`bench console: ${msg}`);
  process.exit(2);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
const kb = (bytes: number) => (bytes / 1024).toFixed(1);

/** Every process this run started, killed if the bench dies half-way. */
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

// ---- (a) first-page JavaScript ------------------------------------------------------------------

interface ManifestChunk {
  file: string;
  isEntry?: boolean;
  imports?: string[];
  dynamicImports?: string[];
}

/** Files of `key` and everything it imports statically (depth first, each once). */
function staticClosure(manifest: Record<string, ManifestChunk>, key: string, seen = new Set<string>()): string[] {
  const chunk = manifest[key];
  if (!chunk || seen.has(key)) return [];
  seen.add(key);
  return [chunk.file, ...(chunk.imports ?? []).flatMap((k) => staticClosure(manifest, k, seen))];
}

function firstPageJs(): void {
  const path = `${DIST}.vite/manifest.json`;
  if (!existsSync(path)) fail(`${path} is missing: run npm run build (vite build with build.manifest)`);
  const manifest = JSON.parse(readFileSync(path, "utf8")) as Record<string, ManifestChunk>;
  const entry = Object.keys(manifest).find((k) => manifest[k]!.isEntry);
  if (!entry) fail("the manifest has no entry chunk");
  const gz = (file: string) => {
    const raw = readFileSync(`${DIST}${file}`);
    return { file, raw: raw.length, gz: gzipSync(raw, { level: 9 }).length };
  };
  const files = staticClosure(manifest, entry)
    .filter((f) => f.endsWith(".js"))
    .map(gz);
  const total = files.reduce((s, f) => s + f.gz, 0);
  console.log("first-page JavaScript (entry + static imports, gzip -9):");
  for (const f of files)
    console.log(`  ${f.file.padEnd(40)} ${kb(f.raw).padStart(8)} KB raw ${kb(f.gz).padStart(7)} KB gz`);
  console.log(
    `  total ${kb(total)} KB gz of the ${BUDGET_KB} KB budget (${total <= BUDGET_KB * 1024 ? "within" : "OVER"})`,
  );
  // For context: what the first route a signed-in operator lands on (Fleet) adds when it loads lazily.
  const fleet = Object.keys(manifest).find((k) => /pages\/fleet\.tsx$/.test(k));
  if (fleet) {
    const seen = new Set(staticClosure(manifest, entry));
    const extra = staticClosure(manifest, fleet)
      .filter((f) => f.endsWith(".js") && !seen.has(f))
      .map(gz);
    const more = extra.reduce((s, f) => s + f.gz, 0);
    console.log(`  + Fleet route (lazy): ${kb(more)} KB gz → ${kb(total + more)} KB gz to a painted Fleet`);
  }
}

// ---- (b) Fleet with N agents ------------------------------------------------------------------------

async function fleetPage(): Promise<void> {
  const nats = await startNats();
  const db = await createTestDatabase("orch_bench");
  const linkPort = await freePort();
  let system: Awaited<ReturnType<typeof startSystem>> | undefined;
  let fleet: SimFleet | undefined;
  const browser = await launchBrowser();
  try {
    system = await startSystem({
      nats,
      db,
      services: ["auth", "agents", "notify", "gateway"],
      publicHost: "localhost",
      env: {
        // Plaintext link as in bench/agents.ts: the simulated links measure the protocol, not TLS.
        ORCH_AGENTS_INSECURE: "true",
        ORCH_AGENTS_LINK_HOST: "127.0.0.1",
        ORCH_AGENTS_LINK_PORT: String(linkPort),
        ORCH_LOG_LEVEL: "warn",
      },
    });
    const nc = await nats.connect("bench-console");
    fleet = startSimFleet({ target: `127.0.0.1:${linkPort}`, count: agentCount, metricsIntervalS: 60 });
    children.add(fleet.child);
    const keys = await fleet.next("keys");
    const welcomed = await fleet.next("welcomed");
    console.log(`\nFleet with ${welcomed.count} simulated agents (${welcomed.ms.toFixed(0)} ms to connect them)`);
    const failed = new Set(welcomed.failedIds);
    const approveS = await approveAll(
      nc,
      keys.nodeIds.filter((id) => !failed.has(id)),
    );
    console.log(`  approved in ${approveS.toFixed(1)} s (SetApproval over NATS)`);

    const token = await system.login(system.admin);
    const code = await system.api("POST", "/api/v1/auth/login-codes", { token, body: {} });
    if (code.status !== 201) throw new Error(`POST /auth/login-codes: ${code.status} ${code.text}`);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(code.body.url as string);
    await page.waitForURL((u) => u.pathname !== "/login", { timeout: 30_000 });
    if (new URL(page.url()).pathname !== "/") await page.goto("/");
    // A function, not a string: the console's CSP forbids eval, which a string predicate needs.
    await page.waitForFunction(() => performance.getEntriesByName("fleet:painted").length > 0, undefined, {
      timeout: 120_000,
    });
    const marks = (await page.evaluate(`(() => {
      const d = performance.getEntriesByName("fleet:data")[0];
      const p = performance.getEntriesByName("fleet:painted")[0];
      return { data: d ? d.startTime : null, painted: p ? p.startTime : null };
    })()`)) as { data: number | null; painted: number | null };
    const rows = await page.getByRole("row").count();
    console.log(
      `  fleet:data → fleet:painted ${marks.data === null ? "-" : (marks.painted! - marks.data).toFixed(1)} ms; ` +
        `navigation → painted ${marks.painted?.toFixed(0)} ms; ${rows} rows in the DOM (virtualised)`,
    );

    // Scroll the list under the mouse, one screen per wheel turn, while the page records frame gaps.
    const table = page.getByRole("table").first();
    const box = await table.boundingBox();
    await page.mouse.move(
      (box?.x ?? 0) + (box?.width ?? 1280) / 2,
      (box?.y ?? 0) + Math.min(300, (box?.height ?? 600) / 2),
    );
    await page.evaluate(`(() => {
      window.__frames = [];
      window.__sampling = true;
      let last = performance.now();
      const tick = (now) => {
        window.__frames.push(now - last);
        last = now;
        if (window.__sampling) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    })()`);
    for (let i = 0; i < screens; i++) {
      await page.mouse.wheel(0, 800);
      await sleep(100);
    }
    await sleep(300);
    const frames = ((await page.evaluate("(window.__sampling = false, window.__frames)")) as number[])
      .slice(1)
      .sort((a, b) => a - b);
    const scrolled = await page.evaluate(`(() => {
      const t = document.querySelector('[role="table"]');
      let el = t;
      while (el && el.scrollHeight <= el.clientHeight) el = el.parentElement;
      return Math.round((el ?? document.scrollingElement).scrollTop);
    })()`);
    console.log(
      `  scrolling ${screens} screens: ${frames.length} frames, p50 ${pct(frames, 50).toFixed(1)} ms, ` +
        `p95 ${pct(frames, 95).toFixed(1)} ms, max ${(frames.at(-1) ?? NaN).toFixed(1)} ms, ` +
        `${frames.filter((f) => f > 50).length} frames > 50 ms; scrolled to ${scrolled} px`,
    );
    await context.close();
  } finally {
    await browser.close().catch(() => {});
    if (fleet) {
      fleet.command({ type: "stop" });
      await Promise.race([new Promise((r) => fleet!.child.once("exit", r)), sleep(5000)]);
      fleet.child.kill("SIGKILL");
    }
    await system?.stop();
    await db.drop();
    await nats.stop();
  }
}

// ---- (c) the plan view: N agents × M resources ------------------------------------------------------

const PLAN_BUDGET_MS = 1000;
const PLAN_LOADS = 3;

/** A ULID-shaped id (26 Crockford base-32 characters), distinct per n. */
const fakeUlid = (prefix: string, n: number) =>
  `01${prefix}${n.toString(32).toUpperCase().padStart(22, "0")}`.slice(0, 26);

/** The synthetic run and its operations with results: every resource a small file diff. */
function syntheticPlan(agents: number, resources: number) {
  const runId = fakeUlid("RUN", 1);
  const at = new Date().toISOString();
  const targets = Array.from({ length: agents }, (_, i) => ({
    operation_id: fakeUlid("OP", i + 1),
    node_id: `node-${String(i).padStart(5, "0")}`,
    name: `web-${String(i + 1).padStart(4, "0")}`,
    batch: 1,
    status: "succeeded",
  }));
  const run = {
    run_id: runId,
    assignment: "bench",
    kind: "plan",
    status: "completed",
    selector: "role=web",
    modules: ["web-base"],
    batch_size: agents,
    batches: 1,
    max_failures: null,
    failures: 0,
    created_at: at,
    finished_at: at,
    started_by: "01BENCHOPERATOR00000000000",
    operations: targets,
  };
  const diffOf = (agent: number, r: number) =>
    [
      `Index: /etc/app/conf-${r}.conf`,
      "===================================================================",
      `--- /etc/app/conf-${r}.conf\tcurrent`,
      `+++ /etc/app/conf-${r}.conf\tdesired`,
      "@@ -1,5 +1,6 @@",
      ` # managed by orch (agent ${agent})`,
      `-listen = 80`,
      `+listen = 8080`,
      ` workers = 4`,
      `-token = ***`,
      `+token = ***`,
      `+tls = on`,
      ` log = /var/log/app-${r}.log`,
      "",
    ].join("\n");
  const operations = targets.map((t, i) => ({
    id: t.operation_id,
    node_id: t.node_id,
    node_name: t.name,
    kind: "plan",
    modules: ["web-base"],
    status: "succeeded",
    created_at: at,
    started_at: at,
    finished_at: at,
    deadline: at,
    actor: { id: run.started_by, name: "bench" },
    summary: { ok: 0, changed: resources, failed: 0, skipped: 0, unsupported: 0 },
    error_code: null,
    error: null,
    assignment: "bench",
    run_id: runId,
    results: Array.from({ length: resources }, (_, r) => ({
      id: `conf-${r}`,
      module: "web-base",
      type: "file",
      status: "changed",
      changed: true,
      diff: diffOf(i, r),
      message: "would change",
      duration_ms: 1,
      has_output: false,
    })),
  }));
  return { run, operations };
}

async function planView(): Promise<void> {
  const nats = await startNats();
  const db = await createTestDatabase("orch_bench");
  let system: Awaited<ReturnType<typeof startSystem>> | undefined;
  const browser = await launchBrowser();
  try {
    system = await startSystem({
      nats,
      db,
      services: ["auth", "agents", "notify", "gateway"],
      publicHost: "localhost",
      env: { ORCH_LOG_LEVEL: "warn" },
    });
    const { run, operations } = syntheticPlan(planAgents, planResources);
    const PAGE = 100;
    const json = (body: unknown) => ({ status: 200, contentType: "application/json", body: JSON.stringify(body) });
    const bytes = JSON.stringify(operations).length;
    console.log(
      `\nPlan view: ${planAgents} agents × ${planResources} resources ` +
        `(${(bytes / 1024 / 1024).toFixed(1)} MB of results in pages of ${PAGE}, served by page.route)`,
    );

    const token = await system.login(system.admin);
    const code = await system.api("POST", "/api/v1/auth/login-codes", { token, body: {} });
    if (code.status !== 201) throw new Error(`POST /auth/login-codes: ${code.status} ${code.text}`);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    // The run's routes answer from memory: what is measured is the page, not the state service.
    await page.route("**/api/v1/assignments/bench/runs/**", async (route) => {
      const url = new URL(route.request().url());
      if (url.pathname.endsWith("/operations")) {
        const from = Number(url.searchParams.get("cursor") ?? "0");
        const limit = Number(url.searchParams.get("limit") ?? "50");
        const slice = operations.slice(from, from + limit);
        const next = from + limit < operations.length ? String(from + limit) : null;
        return route.fulfill(json({ operations: slice, has_more: next !== null, next_cursor: next }));
      }
      if (url.pathname.endsWith("/stream")) {
        return route.fulfill({
          status: 200,
          contentType: "text/event-stream",
          body: `event: run\ndata: ${JSON.stringify(run)}\n\nevent: end\ndata: {"status":"completed"}\n\n`,
        });
      }
      return route.fulfill(json(run));
    });
    await page.goto(code.body.url as string);
    await page.waitForURL((u) => u.pathname !== "/login", { timeout: 30_000 });

    // Where the main thread's time went during each load (Chromium's counters restart with a navigation).
    const cdp = await context.newCDPSession(page);
    await cdp.send("Performance.enable");
    const metrics = async () => {
      const { metrics: list } = (await cdp.send("Performance.getMetrics")) as {
        metrics: { name: string; value: number }[];
      };
      return new Map(list.map((m) => [m.name, m.value]));
    };
    const figures: number[] = [];
    for (let i = 0; i < PLAN_LOADS; i++) {
      await page.goto(new URL(`/assignments/bench/runs/${run.run_id}`, page.url()).href);
      // A function, not a string: the console's CSP forbids eval, which a string predicate needs.
      await page.waitForFunction(() => performance.getEntriesByName("plan:painted").length > 0, undefined, {
        timeout: 120_000,
      });
      const m = (await page.evaluate(`(() => {
        const d = performance.getEntriesByName("plan:data")[0];
        const p = performance.getEntriesByName("plan:painted")[0];
        return {
          data: d ? d.startTime : null,
          painted: p ? p.startTime : null,
          sections: document.querySelectorAll('[data-testid="run-agent"]').length,
          diffs: document.querySelectorAll('[data-testid="diff"] .d2h-file-wrapper').length,
          nodes: document.getElementsByTagName("*").length,
        };
      })()`)) as { data: number | null; painted: number | null; sections: number; diffs: number; nodes: number };
      const after = await metrics();
      const spent = (name: string) => ((after.get(name) ?? 0) * 1000).toFixed(0);
      const ms = m.data === null || m.painted === null ? NaN : m.painted - m.data;
      figures.push(ms);
      console.log(
        `  load ${i + 1}: plan:data → plan:painted ${ms.toFixed(1)} ms; navigation → painted ` +
          `${m.painted?.toFixed(0)} ms; ${m.sections} agent sections, ${m.diffs} diffs rendered, ${m.nodes} DOM elements; ` +
          `whole load: script ${spent("ScriptDuration")} ms, style ${spent("RecalcStyleDuration")} ms, ` +
          `layout ${spent("LayoutDuration")} ms ` +
          `(load average ${loadavg()
            .map((l) => l.toFixed(2))
            .join(" ")})`,
      );
    }
    const sorted = [...figures].sort((a, b) => a - b);
    const median = pct(sorted, 50);
    console.log(
      `  median ${median.toFixed(1)} ms of the ${PLAN_BUDGET_MS} ms budget (${median < PLAN_BUDGET_MS ? "within" : "OVER"})`,
    );
    await context.close();
  } finally {
    await browser.close().catch(() => {});
    await system?.stop();
    await db.drop();
    await nats.stop();
  }
}

const hardStop = setTimeout(() => {
  console.error("bench console: exceeded its overall time limit; exiting");
  process.exit(1);
}, 20 * 60_000);
hardStop.unref();

console.log(
  `console bench (${cpus().length} cores, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")})`,
);
firstPageJs();
if (!values["skip-fleet"]) await fleetPage();
if (!values["skip-plan"]) await planView();
await (await import("./lib/console-terminal.js")).benchConsoleTerminal({ samples: terminalSamples });
console.log(
  `\nload average at the end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
process.exit(0);
