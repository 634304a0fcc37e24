/**
 * Single sign-on from the CLI (docs/sso.md):
 *
 *   orchctl login --sso [provider]   the device authorization grant (RFC 8628) when the provider
 *                                    offers it, else a loopback redirect (RFC 8252) to 127.0.0.1
 *   orchctl sso test-mapping --provider <name> --claims file.json
 *
 * The sign-in prompts (the URL to open, the user code) go to stderr, as one JSON line with --json,
 * so stdout keeps the one result document.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import { unwrap, type ResponseBody } from "@orch/client";
import type { Session } from "../config.js";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import { serverClient } from "../http.js";
import type { CliIO } from "../output.js";

type SignInProvider = ResponseBody<"/api/v1/auth/sso/providers", "get">["providers"][number];
type SsoToken = ResponseBody<"/api/v1/auth/sso/token", "post">;
export type MappingResult = ResponseBody<"/api/v1/identity-providers/{name}/test-mapping", "post">;

/** How long the loopback listener waits for the browser to come back. */
export const LOOPBACK_WAIT_MS = 5 * 60_000;

export interface SsoLoginOptions {
  /** Provider name; optional when exactly one is enabled. */
  provider?: string | undefined;
  /** Try to open a browser at the authorization or verification URL. */
  open?: boolean | undefined;
  /** Use the loopback redirect even when the provider offers the device flow. */
  loopback?: boolean | undefined;
}

/** The enabled provider to sign in with: the one named, or the only one. */
export async function chooseProvider(ctx: Context, server: string, name: string | undefined): Promise<SignInProvider> {
  const api = serverClient(server, { timeoutMs: ctx.timeoutMs });
  const { providers } = unwrap(await api.GET("/api/v1/auth/sso/providers"));
  const names = providers.map((p) => p.name).join(", ");
  if (name) {
    const p = providers.find((p) => p.name === name);
    if (p) return p;
    throw new CliError(
      `${server} has no enabled identity provider named ${JSON.stringify(name)}${names ? ` (enabled: ${names})` : ""}`,
      "identity_provider_not_found",
    );
  }
  if (providers.length === 1) return providers[0]!;
  if (!providers.length)
    throw new CliError(`${server} has no enabled identity provider`, "identity_provider_not_found");
  throw new CliError(
    `${server} has ${providers.length} identity providers; choose one: orchctl login --sso <provider> (${names})`,
    "invalid_argument",
  );
}

/** Signs in through an identity provider; returns the new session (not yet stored). */
export async function ssoLogin(ctx: Context, server: string, opts: SsoLoginOptions): Promise<Session> {
  const provider = await chooseProvider(ctx, server, opts.provider);
  const r =
    provider.device_flow && !opts.loopback
      ? await deviceLogin(ctx, server, provider, opts)
      : await loopbackLogin(ctx, server, provider, opts);
  if (typeof r?.token !== "string" || !r.token || typeof r.operator !== "object" || r.operator === null)
    throw new CliError(`${server} sent an invalid sign-in response`, "bad_response");
  return { server, token: r.token, expires_at: r.expires_at, operator: r.operator };
}

/** The sign-in prompt, on stderr: a line for people, one JSON line with --json. */
function prompt(ctx: Context, json: Record<string, unknown>, human: string): void {
  ctx.io.stderr.write(ctx.json ? `${JSON.stringify(json)}\n` : `${human}\n`);
}

/** Opens a URL in the desktop's browser, best effort (nothing happens where there is none). */
function openBrowser(url: string): void {
  const [cmd, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", "", url]]
        : ["xdg-open", [url]];
  try {
    const child = spawn(cmd as string, args as string[], { stdio: "ignore", detached: true });
    child.on("error", () => undefined);
    child.unref();
  } catch {
    // No browser to open: the URL is printed anyway.
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function deviceLogin(ctx: Context, server: string, p: SignInProvider, opts: SsoLoginOptions): Promise<SsoToken> {
  const api = serverClient(server, { timeoutMs: ctx.timeoutMs });
  const d = unwrap(await api.POST("/api/v1/auth/sso/{provider}/device", { params: { path: { provider: p.name } } }));
  const url = d.verification_uri_complete ?? d.verification_uri;
  prompt(
    ctx,
    {
      provider: p.name,
      verification_uri: d.verification_uri,
      verification_uri_complete: d.verification_uri_complete,
      user_code: d.user_code,
      expires_at: d.expires_at,
    },
    `To sign in with ${p.display_name}, open ${url}\nand confirm the code ${d.user_code} (waiting until ${d.expires_at})`,
  );
  if (opts.open) openBrowser(url);
  let interval = Math.max(1, d.interval || 5);
  const deadline = Date.parse(d.expires_at);
  for (;;) {
    await sleep(interval * 1000);
    const r = unwrap(await api.POST("/api/v1/auth/sso/device/token", { body: { device_id: d.device_id } }));
    if (r.status === "complete") return r;
    interval = Math.max(1, r.interval || interval);
    if (Number.isFinite(deadline) && Date.now() > deadline + interval * 1000)
      throw new CliError("the device code expired; run orchctl login --sso again", "sso_device_expired");
  }
}

const PAGE = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:sans-serif;margin:3em"><h1>${title}</h1><p>${text}</p></body>`;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

function answer(res: ServerResponse, status: number, title: string, text: string): void {
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    connection: "close",
  });
  res.end(PAGE(escapeHtml(title), escapeHtml(text)));
}

interface Callback {
  url: string;
  res: ServerResponse;
}

/** Listens on 127.0.0.1:0 for the browser's return to /callback carrying this sign-in's state. */
function listenLoopback(): Promise<{ port: number; next(state: string): Promise<Callback>; close(): void }> {
  const server = createServer();
  let timer: NodeJS.Timeout | undefined;
  const next = (port: number, state: string) =>
    new Promise<Callback>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new CliError("nobody came back from the identity provider in time", "sso_timeout")),
        LOOPBACK_WAIT_MS,
      );
      server.on("request", (req: IncomingMessage, res: ServerResponse) => {
        const u = new URL(req.url ?? "/", `http://127.0.0.1:${port}`);
        if (req.method !== "GET" || u.pathname !== "/callback" || u.searchParams.get("state") !== state)
          return answer(res, 404, "Not this sign-in", "This address only answers the sign-in orchctl started.");
        clearTimeout(timer);
        resolve({ url: u.toString(), res });
      });
    });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        port,
        next: (state) => next(port, state),
        close: () => {
          clearTimeout(timer);
          // Idle keep-alive sockets only: the answer to the browser is still being written.
          server.close();
          server.closeIdleConnections();
        },
      });
    });
  });
}

async function loopbackLogin(
  ctx: Context,
  server: string,
  p: SignInProvider,
  opts: SsoLoginOptions,
): Promise<SsoToken> {
  const api = serverClient(server, { timeoutMs: ctx.timeoutMs });
  const listener = await listenLoopback();
  try {
    const redirect_uri = `http://127.0.0.1:${listener.port}/callback`;
    const a = unwrap(
      await api.POST("/api/v1/auth/sso/{provider}/authorize", {
        params: { path: { provider: p.name } },
        body: { redirect_uri },
      }),
    );
    prompt(
      ctx,
      { provider: p.name, authorization_url: a.authorization_url, redirect_uri },
      `To sign in with ${p.display_name}, open this URL in a browser on this machine:\n${a.authorization_url}`,
    );
    if (opts.open) openBrowser(a.authorization_url);
    const cb = await listener.next(a.state);
    try {
      const r = unwrap(await api.POST("/api/v1/auth/sso/token", { body: { callback_url: cb.url } }));
      answer(cb.res, 200, "Signed in", `orchctl is signed in as ${r.operator.name}; you can close this tab.`);
      return r;
    } catch (err) {
      const why = err instanceof ProblemError ? err.problem.detail : String(err);
      answer(cb.res, 400, "Sign-in failed", `${why} See the terminal for details.`);
      throw err;
    }
  } finally {
    listener.close();
  }
}

/** The lines `sso test-mapping` prints for people. */
export function mappingLines(r: MappingResult, provider: string): string[] {
  if (!r.matched)
    return [`No rule of ${provider} matches: ${r.reason ?? "no rule matched"}`, "Sign-in would be refused."];
  const rule = r.rule_name ? `${r.rule_name} (rule ${r.rule_index})` : `rule ${r.rule_index}`;
  return [
    `Matched ${rule} of ${provider}`,
    `operator: ${r.operator_name ?? "-"}`,
    `role:     ${r.role}`,
    `scope:    ${r.agent_selector ?? (r.role === "admin" ? "- (admins are unscoped)" : "- (every agent)")}`,
  ];
}

async function readClaims(path: string): Promise<Record<string, unknown>> {
  let claims: unknown;
  try {
    claims = JSON.parse(await readFile(path, "utf8"));
  } catch (err) {
    throw new CliError(`cannot read claims from ${path}: ${(err as Error).message}`, "invalid_argument");
  }
  if (!claims || typeof claims !== "object" || Array.isArray(claims))
    throw new CliError(`${path} must hold a JSON object (an ID token's claims)`, "invalid_argument");
  return claims as Record<string, unknown>;
}

export function register(program: Command, io: CliIO): void {
  const sso = program.command("sso").description("single sign-on: try the mapping rules of an identity provider");
  sso
    .command("test-mapping")
    .description("show which mapping rule a set of claims would hit (admin; nothing is created)")
    .requiredOption("--provider <name>", "identity provider")
    .requiredOption("--claims <file>", "JSON file with the claims, as in an ID token's payload")
    .action(
      action(io, async (ctx, opts: { provider: string; claims: string }) => {
        const claims = await readClaims(opts.claims);
        const r = unwrap(
          await ctx.api.POST("/api/v1/identity-providers/{name}/test-mapping", {
            params: { path: { name: opts.provider } },
            body: { claims },
          }),
        );
        ctx.out.result(r, () => {
          for (const l of mappingLines(r, opts.provider)) ctx.out.line(l);
        });
      }),
    );
}
