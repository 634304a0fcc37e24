/** orchctl terminal list | show | close | attach | transcript */
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Command } from "commander";
import { unwrap, type TerminalSession } from "@orch/client";
import { action, type Context } from "../context.js";
import { CliError, ProblemError, type Problem } from "../errors.js";
import { apiUrl, type Query } from "../http.js";
import { SESSION_COLUMNS, closedLine, sessionFields, sessionRows, transcriptWrittenNote } from "../format/terminal.js";
import type { CliIO } from "../output.js";
import { RAW_HELP, attachTerminal, exitWith } from "./ssh.js";

const byId = (session_id: string) => ({ params: { path: { session_id } } });
const STATUSES = ["opening", "open", "closed", "failed"];

/**
 * GET that keeps the response headers and streams the body (the list's X-Next-Cursor, transcript
 * downloads that may be larger than memory should hold).
 */
async function rawGet(
  ctx: Context,
  path: string,
  query: Query | undefined,
  onData?: (chunk: Buffer) => void,
): Promise<{ headers: IncomingMessage["headers"]; body: Buffer }> {
  const server = await ctx.orch.server();
  const token = await ctx.orch.token(server);
  const url = new URL(apiUrl(server, path, query));
  return new Promise((resolve, reject) => {
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(
      url,
      { method: "GET", headers: { authorization: `Bearer ${token}`, "user-agent": "orchctl" } },
      (res) => {
        const chunks: Buffer[] = [];
        const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300;
        res.on("data", (c: Buffer) => (ok && onData ? onData(c) : chunks.push(c)));
        res.on("error", reject);
        res.on("end", () => {
          const body = Buffer.concat(chunks);
          if (ok) return resolve({ headers: res.headers, body });
          let p: Problem = {
            type: "about:blank",
            title: res.statusMessage ?? "error",
            status: res.statusCode,
            detail: `HTTP ${res.statusCode}`,
            code: `http_${res.statusCode}`,
          };
          try {
            p = { ...p, ...(JSON.parse(body.toString()) as Partial<Problem>) };
          } catch {
            /* not problem+json */
          }
          reject(new ProblemError(p));
        });
      },
    );
    req.setTimeout(ctx.timeoutMs, () => req.destroy(new CliError(`request to ${server} timed out`, "timeout")));
    req.on("error", (err) =>
      reject(
        err instanceof CliError
          ? err
          : new CliError(`cannot connect to ${server}: ${err.message}`, "connection_failed", { cause: err }),
      ),
    );
    req.end();
  });
}

function parseLimit(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 500)
    throw new CliError(`--limit must be an integer between 1 and 500, got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}

type Sub = (parent: Command, io: CliIO) => void;

const list: Sub = (term, io) =>
  term
    .command("list")
    .description("list sessions (yours; an admin sees everyone's), newest first")
    .option("--status <status>", `only this status (${STATUSES.join(", ")})`)
    .option("--limit <n>", "one page of this size (without --limit/--cursor: every session, up to 10 000)")
    .option("--cursor <id>", "continue after this session id (printed when more exist)")
    .action(
      action(io, async (ctx, opts: { status?: string; limit?: string; cursor?: string }) => {
        if (opts.status && !STATUSES.includes(opts.status))
          throw new CliError(`--status must be one of ${STATUSES.join(", ")}`, "invalid_argument");
        const res = await rawGet(ctx, "/terminal", {
          status: opts.status,
          limit: parseLimit(opts.limit),
          cursor: opts.cursor,
        });
        const sessions = JSON.parse(res.body.toString()) as TerminalSession[];
        const next = typeof res.headers["x-next-cursor"] === "string" ? res.headers["x-next-cursor"] : null;
        ctx.out.result({ sessions, next_cursor: next }, () => {
          ctx.out.table(SESSION_COLUMNS, sessionRows(sessions));
          if (next) ctx.out.note(`more sessions: orchctl terminal list --cursor ${next}`);
        });
      }),
    );

const show: Sub = (term, io) =>
  term
    .command("show")
    .description("show one session")
    .argument("<session-id>")
    .action(
      action(io, async (ctx, id: string) => {
        const s = unwrap(await ctx.api.GET("/api/v1/terminal/session/{session_id}", byId(id)));
        ctx.out.result(s, () => ctx.out.fields(sessionFields(s)));
      }),
    );

const close: Sub = (term, io) =>
  term
    .command("close")
    .description("close a session: ends its shell and finalises the transcript")
    .argument("<session-id>")
    .action(
      action(io, async (ctx, id: string) => {
        const slow = ctx.orch.client(true, { timeoutMs: Math.max(ctx.timeoutMs, 30_000) });
        unwrap(await slow.DELETE("/api/v1/terminal/session/{session_id}", byId(id)));
        const s = unwrap(await ctx.api.GET("/api/v1/terminal/session/{session_id}", byId(id)));
        ctx.out.result(s, () => ctx.out.line(closedLine(s)));
      }),
    );

const attach: Sub = (term, io) =>
  term
    .command("attach")
    .description("attach to a live session again (yours, or any as an admin)")
    .argument("<session-id>")
    .option("--raw", RAW_HELP)
    .action(
      action(io, async (ctx, id: string, opts: { raw?: boolean }) => {
        const t = unwrap(await ctx.api.POST("/api/v1/terminal/session/{session_id}/ticket", byId(id)));
        if (ctx.json) return ctx.out.result(t, () => {});
        const token = await ctx.orch.token(await ctx.orch.server());
        exitWith(await attachTerminal(t.ws_url, token, undefined, { raw: opts.raw }));
      }),
    );

const transcript: Sub = (term, io) =>
  term
    .command("transcript")
    .description("download the asciicast v2 transcript (play it with asciinema play); checks its SHA-256")
    .argument("<session-id>")
    .option("-o, --output <file>", "write to this file instead of stdout")
    .action(
      action(io, async (ctx, id: string, opts: { output?: string }) => {
        if (ctx.json && !opts.output)
          throw new CliError("--json needs -o <file>: the transcript itself is the output", "invalid_argument");
        const hash = createHash("sha256");
        let bytes = 0;
        const file = opts.output ? createWriteStream(opts.output, { mode: 0o600 }) : undefined;
        const res = await rawGet(ctx, `/terminal/session/${encodeURIComponent(id)}/transcript`, undefined, (chunk) => {
          hash.update(chunk);
          bytes += chunk.length;
          if (file) file.write(chunk);
          else io.stdout.write(chunk.toString("utf8"));
        });
        if (file)
          await new Promise<void>((resolve, reject) =>
            file.end((err?: Error | null) => (err ? reject(err) : resolve())),
          );
        const sha256 = hash.digest("hex");
        const stored =
          typeof res.headers["x-transcript-sha256"] === "string" ? res.headers["x-transcript-sha256"] : null;
        if (stored && stored !== sha256)
          throw new CliError(
            `the transcript does not match the SHA-256 stored when the session ended (${stored}); it was modified`,
            "transcript_mismatch",
          );
        ctx.out.result({ session_id: id, file: opts.output ?? null, bytes, sha256, verified: stored !== null }, () => {
          if (opts.output) ctx.out.note(transcriptWrittenNote(bytes, opts.output, Boolean(stored)));
        });
      }),
    );

export function register(program: Command, io: CliIO): void {
  const term = program.command("terminal").description("recorded terminal sessions (open one with orchctl ssh)");
  for (const sub of [list, show, close, attach, transcript]) sub(term, io);
}
