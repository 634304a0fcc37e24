/** orchctl ssh <agent>: an interactive, recorded shell on an agent through the gateway's WebSocket. */
import { spawnSync } from "node:child_process";
import type { Command } from "commander";
import WebSocket from "ws";
import { unwrap, type OpenedTerminal } from "@orch/client";
import { AGENT_ARG, resolveNodeId } from "../agent-lookup.js";
import { action, type Context } from "../context.js";
import { approvalBody } from "./apply.js";
import { CliError, ProblemError, type Problem } from "../errors.js";
import type { CliIO } from "../output.js";
import { endReasonText } from "../sse.js";
import { ControlStripper, stripsControl } from "../terminal-control.js";

/** What an attach needs from the process; tests and the real CLI pass their own. */
export interface TerminalIO {
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: { write(s: string): unknown };
}

const processIO = (): TerminalIO => ({ stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });

/** What stderr says when the attach ended without the shell's exit status. */
export function sessionEndText(code: number, reason: string): string {
  return `session ended (${reason ? endReasonText(reason) : `connection closed, code ${code}`})`;
}

/** ssh's convention: 255 when the remote status is unknown (connection lost, session killed). */
export const UNKNOWN_EXIT = 255;

export function exitCodeOf(reason: string): number {
  const m = /^exit:(\d+)$/.exec(reason);
  return m ? Math.min(Number(m[1]), 255) : UNKNOWN_EXIT;
}

function connect(url: string, token: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    // The bearer token binds the ticket to us: a leaked ws_url is useless to anyone else.
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => {
        let p: Problem = {
          type: "about:blank",
          title: "attach refused",
          status: res.statusCode,
          detail: `attach refused with HTTP ${res.statusCode}`,
          code: `http_${res.statusCode}`,
        };
        try {
          p = { ...p, ...(JSON.parse(body) as Partial<Problem>) };
        } catch {
          /* not problem+json */
        }
        reject(new ProblemError(p));
      });
    });
    ws.once("error", (err) =>
      reject(new CliError(`cannot attach to the terminal: ${err.message}`, "attach_failed", { cause: err })),
    );
  });
}

/** What a terminal reports as its size; a stream that is not a terminal reports none. */
export interface WindowLike {
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

/**
 * The size to open and resize a session with. A terminal can report 0×0 (inside `script`, or a
 * pseudo-terminal nobody sized) and a pipe reports nothing; the server wants at least 1×1, so
 * either reads as 80×24, the size a terminal starts with.
 */
export function windowSize(out: WindowLike): { cols: number; rows: number } {
  const dim = (v: number | undefined, fallback: number) =>
    out.isTTY && v !== undefined && Number.isFinite(v) && v >= 1 ? Math.floor(v) : fallback;
  return { cols: dim(out.columns, 80), rows: dim(out.rows, 24) };
}

/** How `--raw` is described wherever a session is attached. */
export const RAW_HELP =
  "when stdout is not a terminal, keep the remote terminal's control sequences and CRLF line ends";

/**
 * Bridges the local terminal to a session until it ends: raw mode, bytes both ways, the window
 * size sent on every SIGWINCH. Output to a pipe or file loses the terminal control the remote PTY
 * adds (terminal-control.ts) unless `raw`. Resolves with the remote exit code.
 */
export async function attachTerminal(
  wsUrl: string,
  token: string,
  tio: TerminalIO = processIO(),
  opts: { raw?: boolean } = {},
): Promise<number> {
  const ws = await connect(wsUrl, token);
  const { stdin, stdout } = tio;
  const strip = stripsControl(stdout, opts.raw) ? new ControlStripper() : undefined;
  const tty = Boolean(stdin.isTTY);
  const sendSize = () => {
    if (stdout.isTTY && ws.readyState === WebSocket.OPEN)
      ws.send(JSON.stringify({ type: "resize", ...windowSize(stdout) }));
  };
  const onInput = (d: Buffer) => ws.readyState === WebSocket.OPEN && ws.send(d, { binary: true });
  // Piped input: its end is a Ctrl-D to the remote shell, as ssh does.
  const onEnd = () => ws.readyState === WebSocket.OPEN && ws.send(Buffer.from([4]), { binary: true });
  ws.on("message", (d: Buffer, binary: boolean) => {
    if (binary) stdout.write(strip ? strip.push(d) : d);
  });
  if (tty) {
    stdin.setRawMode(true);
    // libuv's raw mode keeps output processing (LF → CRLF), which garbles full-screen programs;
    // the remote PTY already did that translation. setRawMode(false) restores the saved settings.
    spawnSync("stty", ["-opost"], { stdio: ["inherit", "ignore", "ignore"] });
  }
  stdin.on("data", onInput);
  stdin.on("end", onEnd);
  stdin.resume();
  stdout.on("resize", sendSize); // Node's SIGWINCH handling: columns/rows are fresh here
  sendSize();
  const { code, reason } = await new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once("close", (c, r) => resolve({ code: c, reason: r.toString() })),
  );
  stdout.off("resize", sendSize);
  stdin.off("data", onInput);
  stdin.off("end", onEnd);
  if (tty) stdin.setRawMode(false);
  stdin.pause();
  const held = strip?.end();
  if (held?.length) stdout.write(held);
  const exit = exitCodeOf(reason);
  if (!reason.startsWith("exit:")) tio.stderr.write(`\r\norchctl: ${sessionEndText(code, reason)}\r\n`);
  return exit;
}

/**
 * `run()` turns a successful command into exit status 0; the remote status is applied as the
 * process exits instead, so `orchctl ssh host -- false; echo $?` behaves like ssh.
 */
export function exitWith(code: number): void {
  if (code !== 0) process.once("exit", () => (process.exitCode = code));
}

/** What opening a terminal asks besides its size: the shell and the approval options (docs/approvals.md). */
export interface OpenOptions {
  shell?: string | undefined;
  reason?: string | undefined;
  breakGlass?: boolean | undefined;
  /** An executed terminal.open change request whose one-time pass opens the terminal. */
  request?: string | undefined;
}

export async function openTerminal(
  ctx: Context,
  agent: string,
  o: OpenOptions,
  size: { cols: number; rows: number },
): Promise<OpenedTerminal> {
  const slow = ctx.orch.client(true, { timeoutMs: Math.max(ctx.timeoutMs, 30_000) });
  const query = {
    cols: size.cols,
    rows: size.rows,
    shell: o.shell,
    ...approvalBody(o),
    ...(o.request ? { change_request_id: o.request } : {}),
  };
  const node_id = await resolveNodeId(ctx, agent);
  return unwrap(await slow.POST("/api/v1/terminal/{node_id}", { params: { path: { node_id }, query } }));
}

export function register(program: Command, io: CliIO): void {
  program
    .command("ssh")
    .description("open an interactive, recorded shell on an agent; exits with the remote exit code")
    .argument("<agent>", AGENT_ARG)
    .option("--shell <path>", "shell binary (must be in the agent's allow-list; default: the agent's first)")
    .option("--raw", RAW_HELP)
    .option(
      "--reason <text>",
      "why: the change request's reason when a policy holds the terminal (or the break-glass reason)",
    )
    .option("--break-glass", "admins: open what an approval policy holds without approval (needs --reason)")
    .option("--request <change-request-id>", "open with the pass of your approved terminal.open change request")
    .addHelpText(
      "after",
      "\nWith --json the session is opened but not attached: prints {session_id, ws_url}." +
        "\nWhen an approval policy holds the terminal it prints the change request and exits 0; once approved, open it with --request <id>." +
        "\nPiped or redirected, the output is text: colours, cursor and bracketed-paste codes are removed and CRLF becomes LF (--raw keeps them).",
    )
    .action(
      action(io, async (ctx, agent: string, opts: OpenOptions & { raw?: boolean }) => {
        const opened = await openTerminal(ctx, agent, opts, windowSize(process.stdout));
        if ("change_request_id" in opened) {
          const id = opened.change_request_id;
          return ctx.out.result(opened, () =>
            ctx.out.line(
              `terminal on ${agent} held for approval: change request ${id} — once approved, orchctl ssh ${agent} --request ${id}`,
            ),
          );
        }
        if (ctx.json) return ctx.out.result(opened, () => {});
        const token = await ctx.orch.token(await ctx.orch.server());
        exitWith(await attachTerminal(opened.ws_url, token, undefined, { raw: opts.raw }));
      }),
    );
}
