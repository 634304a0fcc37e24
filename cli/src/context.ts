/**
 * Per-invocation context for command actions: resolved global options, output, API client.
 *
 *   sub.command("list").action(action(io, async (ctx, opts: { limit?: string }) => {
 *     const page = unwrap(await ctx.api.GET("/api/v1/things", { params: { query: { limit: opts.limit } } }));
 *     ctx.out.result(page, () => ctx.out.table(["NAME"], thingRows(page.things)));
 *   }));
 */
import type { Command } from "commander";
import { resolveHome } from "./config.js";
import { CliError } from "./errors.js";
import type { OrchClient } from "@orch/client";
import { DEFAULT_TIMEOUT_MS, OrchApi } from "./http.js";
import { Output, type CliIO } from "./output.js";

export interface GlobalOptions {
  server?: string;
  json?: boolean;
  home?: string;
  timeout?: string;
}

export interface Context {
  io: CliIO;
  env: Record<string, string | undefined>;
  out: Output;
  json: boolean;
  /** The orchctl home directory (session.json, default key). */
  home: string;
  timeoutMs: number;
  /** --server or $ORCH_URL, if given (else the session's server / default applies). */
  serverOverride: string | undefined;
  orch: OrchApi;
  /** The generated API client with the session's token (`orch.client()`). */
  api: OrchClient;
}

export function parseTimeout(value: string | undefined, env: Record<string, string | undefined>): number {
  const raw = value ?? env.ORCH_TIMEOUT;
  if (raw === undefined || raw === "") return DEFAULT_TIMEOUT_MS;
  const s = Number(raw);
  if (!Number.isFinite(s) || s <= 0)
    throw new CliError(
      `invalid timeout ${JSON.stringify(raw)}: expected a positive number of seconds`,
      "invalid_argument",
    );
  return Math.round(s * 1000);
}

/** Whether --json was given (usable before the context is built, e.g. for error output). */
export function jsonRequested(cmd: Command): boolean {
  return Boolean(cmd.optsWithGlobals<GlobalOptions>().json);
}

export function createContext(cmd: Command, io: CliIO): Context {
  const g = cmd.optsWithGlobals<GlobalOptions>();
  const env = io.env;
  const json = Boolean(g.json);
  const home = resolveHome(g.home, env);
  const timeoutMs = parseTimeout(g.timeout, env);
  const serverOverride = g.server || env.ORCH_URL || undefined;
  const orch = new OrchApi({ server: serverOverride, home, timeoutMs });
  return { io, env, out: new Output(io, json), json, home, timeoutMs, serverOverride, orch, api: orch.client() };
}

/**
 * Wraps a command handler: commander passes (...positionals, options, command); the handler
 * gets (ctx, ...positionals, options).
 */
export function action<A extends unknown[]>(io: CliIO, fn: (ctx: Context, ...args: A) => Promise<void> | void) {
  return async (...args: unknown[]): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const ctx = createContext(cmd, io);
    await fn(ctx, ...(args.slice(0, -1) as A));
  };
}
