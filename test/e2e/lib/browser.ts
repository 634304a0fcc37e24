// The web console end to end: every service as a real process behind http://localhost:PORT (a host
// name, so passkeys work), real orch-agents, and a headless Chromium driven by playwright-core.
// Pages are found by roles, labels and test ids (the UI contract), never by CSS.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import AxeBuilder from "@axe-core/playwright";
import { chromium, type Browser, type BrowserContext, type CDPSession, type Locator, type Page } from "playwright-core";
import type { Test } from "tap";
import {
  createTestDatabase,
  startNats,
  startSystem,
  type DbHandle,
  type KeyPair,
  type NatsHandle,
  type SystemHandle,
  waitMs,
} from "@orch/kit/testing";
import { agentPool, type AgentProcess } from "../../../services/agents/test/harness.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const CHROMIUM = "/usr/bin/chromium";
export const SHOTS = join(ROOT, "test-results/console");
export const ALL_SERVICES = ["auth", "agents", "secrets", "notify", "audit", "state", "terminal", "gateway"];

// Quiet, deterministic Chromium: no phoning home, no first-run UI. --no-sandbox because CI runs as root.
const ARGS = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-default-apps",
  "--disable-domain-reliability",
];

/** Headless Chromium from the system package; a missing browser fails the test (no skipping). */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** What went wrong inside the page: uncaught errors, console errors, CSP violations. */
export interface PageGuard {
  problems: string[];
  /** Ignore console errors matching this (e.g. the network errors of a test that kills the gateway). */
  allow(re: RegExp): void;
  /** Fails `t` if anything was recorded, listing it; then forgets it. */
  check(t: Test, what?: string): void;
}

// "Failed to load resource: the server responded with a status of 401" is how Chromium logs any
// non-2xx fetch; the tests assert statuses themselves, and an expected 401/403/409 is no page error.
const NETWORK_STATUS = /^Failed to load resource: the server responded with a status of \d{3}/;

/**
 * Records `pageerror`, console errors and CSP violations of every page of the context. Violations
 * come from a `securitypolicyviolation` listener installed before any page script runs and reported
 * through a binding (not the page's console, so nothing the page does can hide them).
 */
export async function guardContext(context: BrowserContext): Promise<PageGuard> {
  const problems: string[] = [];
  const allowed: RegExp[] = [NETWORK_STATUS];
  await context.exposeBinding("__orchCspViolation", (_src, v: string) => void problems.push(`CSP violation: ${v}`));
  // A string: this file is type-checked without the DOM library.
  await context.addInitScript(`document.addEventListener("securitypolicyviolation", (e) => {
    window.__orchCspViolation?.(e.effectiveDirective + " blocked " + (e.blockedURI || "inline") + " (" + e.sourceFile + ":" + e.lineNumber + ")");
  });`);
  const watch = (page: Page) => {
    page.on("pageerror", (e) => problems.push(`page error on ${page.url()}: ${e.message}`));
    page.on("console", (m) => {
      const text = m.text();
      if (/Content[- ]Security[- ]Policy/i.test(text)) problems.push(`CSP (console) on ${page.url()}: ${text}`);
      else if (m.type() === "error" && !allowed.some((re) => re.test(text)))
        problems.push(`console error on ${page.url()}: ${text}`);
    });
  };
  context.pages().forEach(watch);
  context.on("page", watch);
  return {
    problems,
    allow: (re) => void allowed.push(re),
    check(t, what = "the page") {
      t.same(problems, [], `${what}: no page errors, console errors or CSP violations`);
      problems.length = 0;
    },
  };
}

export interface ConsolePage {
  context: BrowserContext;
  page: Page;
  guard: PageGuard;
  close(): Promise<void>;
}

export interface ConsoleStack {
  nats: NatsHandle;
  db: DbHandle;
  system: SystemHandle;
  /** http://localhost:PORT */
  url: string;
  linkPort: number;
  browser: Browser;
  agents: ReturnType<typeof agentPool>;
  /** The agents started with the stack, in order, and their node ids. */
  started: AgentProcess[];
  nodeIds: string[];
  /** The bootstrap admin's bearer token. */
  token: string;
  /** The HTTP API as the bootstrap admin (or with `as` = another bearer token). */
  api(
    method: string,
    path: string,
    body?: unknown,
    as?: string,
  ): Promise<{ status: number; body: any; headers: Headers; text: string }>;
  /** Starts one more real orch-agent on the stack's link; resolves with its node id. */
  spawnAgent(args?: string[]): Promise<{ agent: AgentProcess; nodeId: string }>;
  /** A fresh browser context (own cookies) with one guarded page. */
  newPage(opts?: {
    viewport?: { width: number; height: number };
    colorScheme?: "light" | "dark";
  }): Promise<ConsolePage>;
}

/**
 * Every service as a real process on a private NATS and database, the public URL
 * http://localhost:PORT, `agents` real orch-agents dialling the link, and one Chromium; all torn
 * down with `t`. Needs `npm run build` (services, agent and web/dist).
 */
export async function consoleStack(
  t: Test,
  opts: { agents?: number; env?: Record<string, string>; services?: string[] } = {},
): Promise<ConsoleStack> {
  if (!existsSync(join(ROOT, "web/dist/index.html")))
    throw new Error("web/dist/index.html is missing: run npm run build (turbo builds web/)");
  // Each part's stop is registered with `t` before it starts (last registered, first stopped), so a
  // start-up that fails leaks no process, database or directory.
  const transcripts = mkdtempSync(join(tmpdir(), "orch-e2e-console-"));
  t.teardown(() => rmSync(transcripts, { recursive: true, force: true }));
  const nats = await startNats({ owner: t });
  const db = await createTestDatabase({ owner: t });
  const browser = await launchBrowser();
  t.teardown(() => browser.close().catch(() => {}));
  const system = await startSystem({
    owner: t,
    nats,
    db,
    services: opts.services ?? ALL_SERVICES,
    publicHost: "localhost",
    // Eight services starting at once on a busy 2-core machine can take longer than the default.
    readyTimeoutMs: 90_000,
    env: {
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 0x63).toString("base64")}`,
      ORCH_TERMINAL_TRANSCRIPT_DIR: transcripts,
      ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
      // Operators appear in notify's recipient list at once (inbox tests add operators mid-test).
      ORCH_NOTIFY_OPERATORS_CACHE_MS: "0",
      ...(opts.env ?? {}),
    },
  });
  const agents = agentPool();
  t.teardown(() => agents.stop());
  const linkPort = system.linkPort;
  const token = await system.login(system.admin);
  const api: ConsoleStack["api"] = (method, path, body, as = token) =>
    system.api(method, path, { token: as, ...(body !== undefined ? { body } : {}) });
  const spawnAgent = async (args: string[] = []) => {
    const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`, ...args]);
    return { agent, nodeId: await agent.nodeId() };
  };
  const started: AgentProcess[] = [];
  const nodeIds: string[] = [];
  for (let i = 0; i < (opts.agents ?? 0); i++) {
    const a = await spawnAgent();
    started.push(a.agent);
    nodeIds.push(a.nodeId);
  }
  return {
    nats,
    db,
    system,
    url: system.url,
    linkPort,
    browser,
    agents,
    started,
    nodeIds,
    token,
    api,
    spawnAgent,
    async newPage(o = {}) {
      const context = await browser.newContext({
        baseURL: system.url,
        viewport: o.viewport ?? DESKTOP,
        colorScheme: o.colorScheme ?? "light",
      });
      // Playwright's own waits (locators, navigations) scale with the machine like eventually's.
      context.setDefaultTimeout(waitMs(30_000));
      const guard = await guardContext(context);
      const page = await context.newPage();
      return { context, page, guard, close: () => context.close() };
    },
  };
}

/** A new operator with its own key pair; returns its id and key. */
export async function addOperator(
  stack: ConsoleStack,
  name: string,
  role: "admin" | "operator",
  key: KeyPair,
): Promise<string> {
  const r = await stack.api("POST", "/api/v1/operators", { name, public_key: key.publicKeyHex, role });
  if (r.status !== 201) throw new Error(`adding operator ${name}: ${r.status} ${r.text}`);
  return r.body.id as string;
}

/** A one-time login link for `key`'s operator, made through the API as `orchctl console` does. */
export async function loginLinkFor(stack: ConsoleStack, key: KeyPair): Promise<string> {
  const token = await stack.system.login(key);
  const r = await stack.api("POST", "/api/v1/auth/login-codes", {}, token);
  if (r.status !== 201) throw new Error(`POST /auth/login-codes: ${r.status} ${r.text}`);
  return r.body.url as string;
}

/**
 * Signs `page` in as `key`'s operator with a one-time login link and waits until the console left
 * /login (it exchanges the code from the fragment by itself).
 */
export async function signInWithLink(page: Page, stack: ConsoleStack, key: KeyPair): Promise<void> {
  const url = await loginLinkFor(stack, key);
  // From /login itself only the fragment would change: a same-document navigation, no exchange.
  if (page.url().startsWith(stack.url)) await page.goto("about:blank");
  await page.goto(url);
  await page.waitForURL((u) => u.pathname !== "/login", { timeout: waitMs(15_000) });
}

/** The CSRF value the console must echo in x-orch-csrf (from the readable cookie). */
export async function csrfOf(context: BrowserContext): Promise<string | undefined> {
  return (await context.cookies()).find((c) => c.name === "orch_csrf")?.value;
}

export interface VirtualAuthenticator {
  cdp: CDPSession;
  authenticatorId: string;
  credentials(): Promise<Array<{ credentialId: string; isResidentCredential: boolean; signCount: number }>>;
}

/** A CTAP2 platform authenticator with resident keys and user verification, attached to `page`. */
export async function virtualAuthenticator(page: Page): Promise<VirtualAuthenticator> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
    },
  });
  return {
    cdp,
    authenticatorId,
    credentials: async () => (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials,
  };
}

/** Runs axe on the page; fails on any serious or critical violation, naming the rules. */
export async function expectNoA11yViolations(
  t: Test,
  page: Page,
  what = new URL(page.url()).pathname,
  opts: { all?: boolean } = {},
) {
  const results = await new AxeBuilder({ page }).analyze();
  // `all`: every impact counts (minor and moderate too), for pages held to "axe clean".
  const bad = results.violations.filter((v) => opts.all || v.impact === "serious" || v.impact === "critical");
  const detail = bad.map((v) => `${v.id} (${v.impact}, ${v.nodes.length}×: ${v.nodes[0]?.target.join(" ")})`);
  if (detail.length) t.comment(`axe on ${what}: ${detail.join("; ")}`);
  t.same(
    bad.map((v) => v.id),
    [],
    `axe on ${what}: no ${opts.all ? "" : "serious or critical "}violations`,
  );
}

/**
 * Screenshots of the page in light and dark, desktop (1280×800) and phone (390×844):
 * test-results/console/<name>-<light|dark>-<desktop|phone>.png. Leaves the page at desktop/light.
 * `scrollTo`: a part of a long page to shoot (scrolled to its top at each size).
 */
export async function shoot(page: Page, name: string, opts: { scrollTo?: Locator } = {}): Promise<string[]> {
  mkdirSync(SHOTS, { recursive: true });
  const files: string[] = [];
  for (const colorScheme of ["light", "dark"] as const) {
    for (const [size, viewport] of [
      ["desktop", DESKTOP],
      ["phone", PHONE],
    ] as const) {
      await page.setViewportSize(viewport);
      await page.emulateMedia({ colorScheme });
      // Two frames: layout and paint after the media/viewport change.
      await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))");
      // A part far down the page: scrolled to its top again at each size (the layout differs).
      await opts.scrollTo?.evaluate((e) =>
        (e as unknown as { scrollIntoView(o: object): void }).scrollIntoView({ block: "start" }),
      );
      const path = join(SHOTS, `${name}-${colorScheme}-${size}.png`);
      await page.screenshot({ path });
      files.push(path);
    }
  }
  await page.setViewportSize(DESKTOP);
  await page.emulateMedia({ colorScheme: "light" });
  return files;
}

/** GET with the page's cookies (the console session), as the page's own fetch would send them. */
export async function pageFetch(
  page: Page,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  return page.evaluate(
    async ({ method, path, body, headers }) => {
      const res = await fetch(path, {
        method,
        credentials: "same-origin",
        headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {}
      return { status: res.status, body: parsed };
    },
    { method, path, body: opts.body, headers: opts.headers ?? {} },
  );
}
