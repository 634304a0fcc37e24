/**
 * Keystroke echo in the browser terminal, measured in the page: from the keydown Chromium
 * dispatches to the end of the WebSocket message handler that wrote the echoed byte into xterm.js.
 * Beside it, in the same run against the same agent, the figure bench/terminal.ts measures for
 * clients like orchctl (one byte over the attach WebSocket from Node and back), so the browser's
 * own share is visible. Auth, agents, terminal and gateway run as real processes with one real
 * orch-agent; the PTY runs `stty raw -echo; exec cat` so each key comes back exactly once.
 * Budget: in-page echo p99 < 30 ms. Figures are printed, never asserted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { attach } from "../../services/terminal/test/harness.js";
import { launchBrowser } from "../../test/e2e/lib/browser.js";
import { approveAgent } from "./approve-agent.js";

const WARMUP = 20;
const BUDGET_P99_MS = 30;

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

/**
 * Installed before the console's scripts (bench only; production code exposes nothing): records each
 * printable keydown and, after the page's own onmessage handler ran, the first pending key whose
 * byte came back. A string, as this file is checked without the DOM library.
 */
const INSTRUMENT = `(() => {
  const echo = { pending: [], samples: [], sendDelays: [], waiters: [] };
  window.__echo = echo;
  echo.wait = (n) => new Promise((r) => (echo.samples.length >= n ? r() : echo.waiters.push([n, r])));
  document.addEventListener("keydown", (e) => {
    if (e.key.length === 1) echo.pending.push({ code: e.key.charCodeAt(0), t: performance.now() });
  }, true);
  const record = (ev) => {
    if (!(ev.data instanceof ArrayBuffer)) return;
    const now = performance.now();
    for (const b of new Uint8Array(ev.data)) {
      const i = echo.pending.findIndex((p) => p.code === b);
      if (i < 0) continue;
      echo.samples.push(now - echo.pending[i].t);
      if (echo.pending[i].sent !== undefined) echo.sendDelays.push(echo.pending[i].sent - echo.pending[i].t);
      echo.pending.splice(0, i + 1);
    }
    echo.waiters = echo.waiters.filter(([n, r]) => (echo.samples.length >= n ? (r(), false) : true));
  };
  const Native = window.WebSocket;
  const native = Object.getOwnPropertyDescriptor(Native.prototype, "onmessage");
  window.WebSocket = class extends Native {
    send(data) {
      const now = performance.now();
      if (typeof data !== "string") for (const p of echo.pending) if (p.sent === undefined) p.sent = now;
      return super.send(data);
    }
    constructor(...args) {
      super(...args);
      let handler = null;
      Object.defineProperty(this, "onmessage", {
        get: () => handler,
        set: (fn) => {
          handler = fn;
          native.set.call(this, fn ? (ev) => { fn.call(this, ev); record(ev); } : null);
        },
      });
    }
  };
})();`;

async function inPageEcho(page: Page, samples: number): Promise<{ echo: number[]; toSend: number[] }> {
  const rows = page.getByTestId("terminal").locator(".xterm-rows > div");
  await page.getByTestId("terminal").click();
  await page.keyboard.type("stty raw -echo; echo ECHO-RE''ADY; exec cat");
  await page.keyboard.press("Enter");
  await eventually(async () => (await rows.allTextContents()).join("\n").includes("ECHO-READY"), 30_000).catch(
    async (err: Error) => {
      throw new Error(`${err.message}; the terminal shows: ${(await rows.allTextContents()).join("\n").trim()}`);
    },
  );
  await page.evaluate(
    "(window.__echo.samples.length = 0, window.__echo.pending.length = 0, window.__echo.sendDelays.length = 0)",
  );
  for (let i = 0; i < samples + WARMUP; i++) {
    await page.keyboard.press(String.fromCharCode(97 + (i % 26)));
    await page.evaluate(`window.__echo.wait(${i + 1})`);
  }
  const all = (await page.evaluate("window.__echo.samples")) as number[];
  const sends = (await page.evaluate("window.__echo.sendDelays")) as number[];
  return { echo: all.slice(WARMUP).sort((a, b) => a - b), toSend: sends.slice(WARMUP).sort((a, b) => a - b) };
}

/** bench/terminal.ts's echo round trip (which it does not export): one byte over the attach WebSocket. */
async function clientEcho(wsUrl: string, samples: number): Promise<number[]> {
  const r = await attach(wsUrl, { collect: false });
  if (!r.ok) throw new Error(`attach: ${r.status}`);
  const ws = r.a.ws;
  let want = -1;
  let got: (() => void) | undefined;
  let tail = "";
  const ready = new Promise<void>((resolve) => {
    ws.on("message", (d: Buffer, binary: boolean) => {
      if (!binary) return;
      if (want < 0) {
        tail = (tail + d.toString("latin1")).slice(-4096);
        if (tail.includes("ECHO-READY")) resolve();
      } else if (d.includes(want)) {
        want = -1;
        got?.();
      }
    });
  });
  r.a.control({ type: "resize", cols: 120, rows: 40 });
  r.a.send("stty raw -echo; echo ECHO-RE''ADY; exec cat\r");
  await ready;
  await new Promise((res) => setTimeout(res, 200));
  const out: number[] = [];
  for (let i = 0; i < samples + WARMUP; i++) {
    const byte = 97 + (i % 26);
    const done = new Promise<void>((res) => (got = res));
    want = byte;
    const t0 = performance.now();
    r.a.send(String.fromCharCode(byte));
    await done;
    if (i >= WARMUP) out.push(performance.now() - t0);
  }
  ws.close();
  await r.a.closed;
  return out.sort((a, b) => a - b);
}

export interface ConsoleTerminalFigures {
  inPage: number[];
  client: number[];
}

/** Starts its own stack and browser (the fleet part of bench/console.ts has no terminal or real agent). */
export async function benchConsoleTerminal(
  opts: { samples?: number; browser?: Browser } = {},
): Promise<ConsoleTerminalFigures> {
  const samples = opts.samples ?? 1000;
  const dir = mkdtempSync(join(tmpdir(), "orch-bench-console-term-"));
  const nats = await startNats();
  const db = await createTestDatabase("orch_bench");
  const linkPort = await freePort();
  const agents = agentPool();
  const browser = opts.browser ?? (await launchBrowser());
  let system: Awaited<ReturnType<typeof startSystem>> | undefined;
  try {
    system = await startSystem({
      nats,
      db,
      services: ["auth", "agents", "terminal", "gateway"],
      publicHost: "localhost",
      env: {
        ORCH_LOG_LEVEL: "warn",
        ORCH_AGENTS_LINK_HOST: "127.0.0.1",
        ORCH_AGENTS_LINK_PORT: String(linkPort),
        ORCH_TERMINAL_TRANSCRIPT_DIR: join(dir, "transcripts"),
      },
    });
    const sys = system;
    const token = await sys.login(sys.admin);
    const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/bash"]);
    const nodeId = await agent.nodeId();
    await approveAgent(sys, token, nodeId, "bench-1");

    process.stderr.write("bench console terminal: echo through a WebSocket client (as bench/terminal.ts)\n");
    const opened = await sys.api("POST", "/api/v1/terminal/bench-1?cols=120&rows=40", { token });
    if (opened.status !== 201) throw new Error(`open: ${opened.status} ${opened.text}`);
    const client = await clientEcho(opened.body.ws_url as string, samples);

    process.stderr.write("bench console terminal: echo in the browser terminal (Chromium, xterm.js)\n");
    const code = await sys.api("POST", "/api/v1/auth/login-codes", { token, body: {} });
    if (code.status !== 201) throw new Error(`POST /auth/login-codes: ${code.status} ${code.text}`);
    const context = await browser.newContext({ baseURL: sys.url, viewport: { width: 1280, height: 800 } });
    await context.addInitScript(INSTRUMENT);
    const page = await context.newPage();
    await page.goto(code.body.url as string);
    await page.waitForURL((u) => u.pathname !== "/login", { timeout: 30_000 });
    await page.goto(`/agents/${nodeId}/terminal`);
    await page.waitForURL((u) => u.pathname.startsWith("/terminal/"), { timeout: 30_000 });
    await eventually(async () => (await page.getByTestId("terminal-status").textContent())?.trim() === "open", 30_000);
    const { echo: inPage, toSend } = await inPageEcho(page, samples);
    await context.close();

    const row = (name: string, a: number, b: number) =>
      `  ${name.padEnd(10)} ${a.toFixed(2).padStart(10)} ms ${b.toFixed(2).padStart(14)} ms`;
    console.log(`\nBrowser terminal keystroke echo (${samples} keys, after ${WARMUP} warm-up keys)`);
    console.log(`  ${"".padEnd(10)} ${"in page".padStart(13)} ${"WS client".padStart(17)}`);
    console.log(row("echo p50", pct(inPage, 50), pct(client, 50)));
    console.log(row("echo p99", pct(inPage, 99), pct(client, 99)));
    console.log(row("echo max", inPage.at(-1) ?? Number.NaN, client.at(-1) ?? Number.NaN));
    console.log(
      `  of which keydown → WebSocket send in the page: p50 ${pct(toSend, 50).toFixed(2)} ms, p99 ${pct(toSend, 99).toFixed(2)} ms`,
    );
    const p99 = pct(inPage, 99);
    console.log(
      `  in page = keydown → echoed byte written to xterm.js; WS client = bench/terminal.ts's round trip from Node`,
    );
    console.log(
      `  goal in-page echo p99 < ${BUDGET_P99_MS} ms: ${p99 < BUDGET_P99_MS ? "met" : "NOT met"} (${p99.toFixed(2)} ms)`,
    );
    return { inPage, client };
  } finally {
    if (!opts.browser) await browser.close().catch(() => {});
    await agents.stop();
    await system?.stop();
    await db.drop();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
