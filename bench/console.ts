/**
 * npm run bench -- console [--agents 5000] [--screens 20] [--skip-fleet]
 *
 * (a) The first page's JavaScript, gzipped: web/dist/.vite/manifest.json's entry chunk and its
 *     static imports (dynamic imports = lazy routes are not part of it), against the 200 KB budget.
 * (b) Fleet with N simulated agents (bench/lib/sim-agent.ts, as bench/agents.ts): auth, agents,
 *     notify and gateway as real processes, all agents approved over the agents RPC, the console
 *     opened in headless Chromium: the page's own `fleet:data` → `fleet:painted` measure, then
 *     scrolling the virtual list with the mouse wheel while sampling requestAnimationFrame deltas.
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
  },
});
const agentCount = Number(values.agents);
const screens = Number(values.screens);
if (!Number.isInteger(agentCount) || agentCount < 1 || agentCount > 50_000) fail("--agents must be 1..50000");
if (!Number.isInteger(screens) || screens < 1 || screens > 1000) fail("--screens must be 1..1000");

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
console.log(
  `\nload average at the end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
process.exit(0);
