/**
 * HTTP client for the orchestrator API (`<server>/api/v1`), shared by every command group.
 *
 *   const orch = new OrchApi({ server: flagOrEnv, home, timeoutMs });
 *   const me = await orch.api<Operator>("GET", "/auth/whoami", undefined, { auth: true });
 *   await orch.api("POST", "/things", { name }, { auth: true });          // JSON body
 *   await orch.api("GET", "/things", undefined, { auth: true, query: { limit: 10 } });
 *
 * Inside a command you get a ready instance as `ctx.api` / `ctx.orch` (see context.ts).
 *
 * - Every request has a timeout (10 s default, `--timeout <seconds>` on the command line).
 * - Non-2xx responses throw `ProblemError` carrying the RFC 9457 problem+json body
 *   `{type,title,status,detail,code}` (synthesised when the body is not problem+json).
 * - `auth: true` sends `Authorization: Bearer <token>` from `<home>/session.json`; a missing,
 *   expired or rejected (401) session throws "session expired or revoked; run orchctl login".
 *   `auth: "optional"` sends the token when there is a valid one for this server.
 * - Network failures throw `CliError` naming the server (connection_refused, timeout, ...).
 * - 204 / empty bodies resolve to `undefined`.
 * - Every write (POST/PUT/PATCH/DELETE) carries a fresh `Idempotency-Key`; a 503/504, a
 *   connection error or `idempotency_key_in_flight` is retried with the same key (3 tries in all,
 *   with backoff), so a write whose reply was lost is never made twice (docs/api.md).
 * - Server: the explicit `server` (--server / $ORCH_URL) if given, else the session's, else
 *   http://127.0.0.1:8080. A session's token is only ever sent to the server it was issued by.
 *
 * Adding a command group: create `src/commands/<group>.ts` exporting
 * `register(program: Command, io: CliIO): void`, build sub-commands with `action(io, async (ctx,
 * ...args) => ...)` from context.ts, call `ctx.api(...)`, print with `ctx.out.result(value, () =>
 * ...)`, and add the register call to the list in src/program.ts.
 */
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
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
const defaultRetryDelay = (retry: number) => 250 * 4 ** (retry - 1) * (0.75 + Math.random() / 2);

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

/** One HTTP request without any session handling. */
export async function rawRequest<T = unknown>(req: RawRequest): Promise<T> {
  const server = normalizeServer(req.server);
  const timeoutMs = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const headers: Record<string, string> = {
    accept: "application/json, application/problem+json",
    "user-agent": "orchctl",
  };
  if (req.token) headers.authorization = `Bearer ${req.token}`;
  let body: string | undefined;
  if (req.body !== undefined) {
    body = JSON.stringify(req.body);
    headers["content-type"] = "application/json";
    headers["content-length"] = String(Buffer.byteLength(body));
  }
  // Writes may be retried: the key lets the server answer a retry with the first result.
  const tries = req.method === "GET" ? 1 : WRITE_TRIES;
  if (tries > 1) headers["idempotency-key"] = req.idempotencyKey ?? randomUUID();
  const url = new URL(apiUrl(server, req.path, req.query));
  let res: RawResponse | undefined;
  for (let attempt = 1; ; attempt++) {
    const last = attempt >= tries;
    try {
      res = await send(url, req.method, headers, body, timeoutMs);
    } catch (err) {
      const e = networkError(err, server, timeoutMs);
      if (last || !retryableNetworkError(e)) throw e;
    }
    if (res && (last || !retryableStatus(res.status, res.text))) break;
    res = undefined;
    await new Promise((r) => setTimeout(r, (req.retryDelayMs ?? defaultRetryDelay)(attempt)));
  }
  const { status, statusText, text } = res;
  if (status < 200 || status >= 300) throw new ProblemError(problemFrom(status, statusText, text));
  if (status === 204 || text.trim() === "") return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new CliError(`${server} sent an invalid JSON response to ${req.method} ${req.path}`, "bad_response", {
      cause: err,
    });
  }
}

export interface ApiSettings {
  /** Explicit server (--server / $ORCH_URL); when absent the session's server, else the default. */
  server?: string | undefined;
  /** The orchctl home holding session.json. */
  home: string;
  timeoutMs?: number | undefined;
}

export interface ApiOptions {
  /** true: bearer token required; "optional": sent if present; false (default): never sent. */
  auth?: boolean | "optional";
  query?: Query;
  timeoutMs?: number;
}

export type ApiFn = <T = unknown>(method: HttpMethod, path: string, body?: unknown, opts?: ApiOptions) => Promise<T>;

/** The session-aware API client. `api` is a bound arrow function, safe to destructure. */
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

  api: ApiFn = async <T = unknown>(
    method: HttpMethod,
    path: string,
    body?: unknown,
    opts: ApiOptions = {},
  ): Promise<T> => {
    const server = await this.server();
    let token: string | undefined;
    if (opts.auth === true) token = await this.token(server);
    else if (opts.auth === "optional") token = await this.token(server).catch(() => undefined);
    try {
      return await rawRequest<T>({
        server,
        method,
        path,
        body,
        token,
        query: opts.query,
        timeoutMs: opts.timeoutMs ?? this.settings.timeoutMs,
      });
    } catch (err) {
      if (token && err instanceof ProblemError && err.status === 401)
        throw new ProblemError(err.problem, SESSION_EXPIRED);
      throw err;
    }
  };
}
