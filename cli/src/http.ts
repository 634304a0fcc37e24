/**
 * HTTP transport for the orchestrator API (`<server>/api/v1`), shared by every command group.
 * Commands call the generated client from @orch/client; this file supplies its `fetch`:
 *
 *   const api = orch.client();                       // bearer token from the session
 *   const me = unwrap(await api.GET("/api/v1/auth/whoami"));
 *   unwrap(await api.POST("/api/v1/operators", { body: { name, public_key, role } }));
 *
 * Inside a command you get a ready client as `ctx.api` and the session-aware `ctx.orch` (context.ts).
 *
 * - Every request has a timeout (10 s default, `--timeout <seconds>` on the command line).
 * - Non-2xx responses throw `ProblemError` carrying the RFC 9457 problem+json body
 *   `{type,title,status,detail,code}` (synthesised when the body is not problem+json), so a
 *   client call that returns has succeeded.
 * - `auth: true` sends `Authorization: Bearer <token>` from `<home>/session.json`; a missing,
 *   expired or rejected (401) session throws "session expired or revoked; run orchctl login".
 *   `auth: "optional"` sends the token when there is a valid one for this server.
 * - Network failures throw `CliError` naming the server (connection_refused, timeout, ...).
 * - 204 / empty bodies resolve to `undefined`.
 * - Every write (POST/PUT/PATCH/DELETE) carries a fresh `Idempotency-Key`; a 503/504, a
 *   connection error or `idempotency_key_in_flight` is retried with the same key (3 tries in all,
 *   with backoff), so a write whose reply was lost is never made twice (docs/http-api.md).
 * - Server: the explicit `server` (--server / $ORCH_URL) if given, else the session's, else
 *   http://127.0.0.1:8080, resolved per request. A session's token is only ever sent to the server
 *   it was issued by.
 *
 * Adding a command group: create `src/commands/<group>.ts` exporting
 * `register(program: Command, io: CliIO): void`, build sub-commands with `action(io, async (ctx,
 * ...args) => ...)` from context.ts, call `ctx.api`, hand the typed data to a formatter in
 * `src/format/`, print with `ctx.out.result(value, () => ...)`, and add the register call to the
 * list in src/program.ts.
 */
import { backoff } from "@orch/kit/backoff";
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { createOrchClient, type OrchClient } from "@orch/client";
import { DEFAULT_SERVER, readSession, sessionExpired, type Session } from "./config.js";
import { CliError, ProblemError, SESSION_EXPIRED, type Problem } from "./errors.js";

export const API_PREFIX = "/api/v1";
export const DEFAULT_TIMEOUT_MS = 10_000;

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
export type Query = Record<string, string | number | boolean | undefined | null>;

/** Validates and normalises a server base URL (no trailing slash). */
export function normalizeServer(server: string): string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new CliError(
      `invalid server URL ${JSON.stringify(server)} (expected e.g. ${DEFAULT_SERVER})`,
      "invalid_server",
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliError(
      `invalid server URL ${JSON.stringify(server)}: only http and https are supported`,
      "invalid_server",
    );
  }
  return url.href.replace(/\/+$/, "");
}

export function apiUrl(server: string, path: string, query?: Query): string {
  const url = new URL(`${normalizeServer(server)}${API_PREFIX}${path.startsWith("/") ? path : `/${path}`}`);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  return url.href;
}

export interface RawRequest {
  server: string;
  method: HttpMethod;
  path: string;
  body?: unknown;
  token?: string | undefined;
  query?: Query | undefined;
  timeoutMs?: number | undefined;
  /** Idempotency-Key for a write; a fresh one is made when absent. */
  idempotencyKey?: string | undefined;
  /** Pause before retry n (1-based), in ms; injectable for tests. */
  retryDelayMs?: ((retry: number) => number) | undefined;
}

/** Tries per write: the first plus two retries with the same Idempotency-Key. */
export const WRITE_TRIES = 3;
// 250 ms, then 1 s (±25%): long enough for a restarting service, short enough for a person waiting.
const writeRetryPolicy = backoff({ initialMs: 250, maxMs: 4_000, factor: 4, jitter: 0.25 });
const defaultRetryDelay = (retry: number) => writeRetryPolicy(retry - 1);

/** Answers that mean "the outcome is unknown or not yet known": safe to repeat with the same key. */
function retryableStatus(status: number, text: string): boolean {
  if (status === 503 || status === 504) return true;
  if (status !== 409) return false;
  try {
    return (JSON.parse(text) as { code?: unknown }).code === "idempotency_key_in_flight";
  } catch {
    return false;
  }
}

// Our own timeout is not retried: it already waited as long as the user asked.
const retryableNetworkError = (err: CliError) => err.code !== "timeout" && err.code !== "host_not_found";

function errnoOf(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === "object"; i++) {
    const o = e as { code?: unknown; errors?: unknown[]; cause?: unknown };
    if (typeof o.code === "string" && /^E[A-Z_]+$/.test(o.code)) return o.code;
    if (Array.isArray(o.errors) && o.errors.length) {
      const inner = errnoOf(o.errors[0]);
      if (inner) return inner;
    }
    e = o.cause;
  }
  return undefined;
}

function networkError(err: unknown, server: string, timeoutMs: number): CliError {
  if (err instanceof Error && err.name === "TimeoutError") {
    return new CliError(`request to ${server} timed out after ${timeoutMs / 1000}s`, "timeout", { cause: err });
  }
  const code = errnoOf(err);
  switch (code) {
    case "ECONNREFUSED":
      return new CliError(
        `cannot connect to ${server}: connection refused; is the orchestrator running there? Use --server or ORCH_URL to choose another server`,
        "connection_refused",
        { cause: err },
      );
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new CliError(`cannot connect to ${server}: host not found`, "host_not_found", { cause: err });
    case "ETIMEDOUT":
      return new CliError(`cannot connect to ${server}: connection timed out`, "timeout", { cause: err });
    default: {
      const why = code ?? (err instanceof Error ? err.message : String(err));
      return new CliError(`cannot connect to ${server}: ${why}`, "connection_failed", { cause: err });
    }
  }
}

function problemFrom(status: number, statusText: string, text: string): Problem {
  try {
    const body = JSON.parse(text) as Partial<Problem>;
    if (body && typeof body === "object" && (typeof body.detail === "string" || typeof body.title === "string")) {
      return {
        ...body,
        type: body.type ?? "about:blank",
        title: body.title ?? statusText,
        status: body.status ?? status,
        detail: body.detail ?? body.title ?? statusText,
        code: body.code ?? `http_${status}`,
      } as Problem;
    }
  } catch {
    // not JSON: fall through
  }
  const detail = text.trim().slice(0, 200) || `${status} ${statusText}`.trim();
  return { type: "about:blank", title: statusText || `HTTP ${status}`, status, detail, code: `http_${status}` };
}

interface RawResponse {
  status: number;
  statusText: string;
  text: string;
}

const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/**
 * node:http(s) rather than fetch: fetch refuses some ports outright ("bad port") and hides the
 * socket error codes we turn into messages. The timeout covers the whole exchange.
 */
function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  timeoutMs: number,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (err: Error | null, value?: RawResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(value!);
    };
    const request = url.protocol === "https:" ? httpsRequest : httpRequest;
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_RESPONSE_BYTES) req.destroy(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on("end", () =>
        settle(null, {
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? "",
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
      res.on("error", (err) => settle(err));
      res.on("close", () => settle(new Error("connection closed before the response was complete")));
    });
    const timer = setTimeout(() => {
      const err = new Error(`timed out after ${timeoutMs} ms`);
      err.name = "TimeoutError";
      req.destroy(err);
      settle(err);
    }, timeoutMs);
    req.on("error", (err) => settle(err));
    req.end(body);
  });
}

interface Exchange {
  server: string;
  method: string;
  url: URL;
  body: string | undefined;
  token?: string | undefined;
  timeoutMs: number;
  idempotencyKey?: string | undefined;
  retryDelayMs?: ((retry: number) => number) | undefined;
}

/** Sends with the write retries; a non-2xx answer throws `ProblemError`. */
async function exchange(req: Exchange): Promise<RawResponse> {
  const headers: Record<string, string> = {
    accept: "application/json, application/problem+json",
    "user-agent": "orchctl",
  };
  if (req.token) headers.authorization = `Bearer ${req.token}`;
  if (req.body !== undefined) {
    headers["content-type"] = "application/json";
    headers["content-length"] = String(Buffer.byteLength(req.body));
  }
  // Writes may be retried: the key lets the server answer a retry with the first result.
  const tries = req.method === "GET" ? 1 : WRITE_TRIES;
  if (tries > 1) headers["idempotency-key"] = req.idempotencyKey ?? randomUUID();
  let res: RawResponse | undefined;
  for (let attempt = 1; ; attempt++) {
    const last = attempt >= tries;
    try {
      res = await send(req.url, req.method, headers, req.body, req.timeoutMs);
    } catch (err) {
      const e = networkError(err, req.server, req.timeoutMs);
      if (last || !retryableNetworkError(e)) throw e;
    }
    if (res && (last || !retryableStatus(res.status, res.text))) break;
    res = undefined;
    await new Promise((r) => setTimeout(r, (req.retryDelayMs ?? defaultRetryDelay)(attempt)));
  }
  if (res.status < 200 || res.status >= 300) throw new ProblemError(problemFrom(res.status, res.statusText, res.text));
  return res;
}

function parseJson(text: string, server: string, method: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(`${server} sent an invalid JSON response to ${method} ${path}`, "bad_response", {
      cause: err,
    });
  }
}

/** One HTTP request without any session handling. */
export async function rawRequest<T = unknown>(req: RawRequest): Promise<T> {
  const server = normalizeServer(req.server);
  const res = await exchange({
    server,
    method: req.method,
    url: new URL(apiUrl(server, req.path, req.query)),
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
    token: req.token,
    timeoutMs: req.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    idempotencyKey: req.idempotencyKey,
    retryDelayMs: req.retryDelayMs,
  });
  if (res.status === 204 || res.text.trim() === "") return undefined as T;
  return parseJson(res.text, server, req.method, req.path) as T;
}

/** Whether (and how) a client call carries the session's bearer token. */
export type AuthMode = boolean | "optional";

export interface TransportOptions {
  /** Resolves the server (and, with `auth`, the token) when a request is made. */
  target: () => Promise<{ server: string; token?: string | undefined }>;
  timeoutMs?: number | undefined;
  retryDelayMs?: ((retry: number) => number) | undefined;
  /** Replaces an error response's `ProblemError`, given the token the request carried. */
  onProblem?: ((err: ProblemError, token: string | undefined) => Error) | undefined;
}

// The generated client needs an absolute base URL; the transport swaps in the real server per request.
const PLACEHOLDER_ORIGIN = "http://orchctl.invalid";

/**
 * A `fetch` for the generated client over node:http, with the rules above. Failures throw (so
 * the client only ever sees 2xx responses); empty query values are dropped, as `apiUrl` does.
 */
export function cliFetch(opts: TransportOptions): (request: Request) => Promise<Response> {
  return async (request) => {
    const { server, token } = await opts.target();
    const given = new URL(request.url);
    const path = given.pathname.startsWith(API_PREFIX) ? given.pathname.slice(API_PREFIX.length) : given.pathname;
    const query: Query = {};
    for (const [k, v] of given.searchParams) query[k] = v;
    const body = request.body === null ? undefined : await request.text();
    let res: RawResponse;
    try {
      res = await exchange({
        server,
        method: request.method,
        url: new URL(apiUrl(server, path, query)),
        body,
        token,
        timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        retryDelayMs: opts.retryDelayMs,
      });
    } catch (err) {
      throw err instanceof ProblemError && opts.onProblem ? opts.onProblem(err, token) : err;
    }
    if (res.status === 204 || res.text.trim() === "") return new Response(null, { status: 204 });
    parseJson(res.text, server, request.method, path);
    return new Response(res.text, { status: res.status, headers: { "content-type": "application/json" } });
  };
}

/** The generated client talking to one server, e.g. before there is a session (login). */
export function serverClient(server: string, opts: { token?: string; timeoutMs?: number } = {}): OrchClient {
  const target = { server: normalizeServer(server), token: opts.token };
  return createOrchClient({
    baseUrl: PLACEHOLDER_ORIGIN,
    fetch: cliFetch({ target: async () => target, timeoutMs: opts.timeoutMs }),
  });
}

export interface ApiSettings {
  /** Explicit server (--server / $ORCH_URL); when absent the session's server, else the default. */
  server?: string | undefined;
  /** The orchctl home holding session.json. */
  home: string;
  timeoutMs?: number | undefined;
}

/** The session-aware API client. */
export class OrchApi {
  private sessionCache: Promise<Session | null> | undefined;

  constructor(readonly settings: ApiSettings) {}

  /** The stored session (cached per instance), or null. */
  session(): Promise<Session | null> {
    this.sessionCache ??= readSession(this.settings.home);
    return this.sessionCache;
  }

  /** The server to talk to: explicit, else the logged-in session's, else the default. */
  async server(): Promise<string> {
    if (this.settings.server) return normalizeServer(this.settings.server);
    const s = await this.session();
    return normalizeServer(s?.server ?? DEFAULT_SERVER);
  }

  /** The bearer token to use for `server`, or an error explaining why there is none. */
  async token(server: string): Promise<string> {
    const s = await this.session();
    if (!s) throw new CliError("not logged in; run orchctl login", "not_logged_in");
    if (normalizeServer(s.server) !== server) {
      throw new CliError(
        `logged in to ${s.server}, not ${server}; run orchctl login --server ${server}`,
        "not_logged_in",
      );
    }
    if (sessionExpired(s)) throw new CliError(SESSION_EXPIRED, "session_expired");
    return s.token;
  }

  /**
   * The generated client for this server; the session and token are read at the first request,
   * so building one never fails.
   */
  client(auth: AuthMode = true, opts: { timeoutMs?: number } = {}): OrchClient {
    const transport = cliFetch({
      target: async () => {
        const server = await this.server();
        let token: string | undefined;
        if (auth === true) token = await this.token(server);
        else if (auth === "optional") token = await this.token(server).catch(() => undefined);
        return { server, token };
      },
      timeoutMs: opts.timeoutMs ?? this.settings.timeoutMs,
      // A 401 to a request that carried the session's token means the session is over.
      onProblem: (err, token) => (token && err.status === 401 ? new ProblemError(err.problem, SESSION_EXPIRED) : err),
    });
    return createOrchClient({ baseUrl: PLACEHOLDER_ORIGIN, fetch: transport });
  }
}
