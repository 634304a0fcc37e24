/**
 * orchctl secrets set | list | show | rm | reencrypt
 *
 * A value is read from stdin when stdin is not a terminal, else from a hidden prompt (asked
 * twice). It is never taken from argv: arguments end up in shell history and `ps` output.
 */
import type { Command } from "commander";
import { unwrap, type RequestBody, type SecretMeta, type SecretPage } from "@orch/client";
import { agentNames, nodeIdOrRef } from "../agent-lookup.js";
import { action, type Context } from "../context.js";
import { operatorNames } from "../operator-names.js";
import { CliError, ProblemError } from "../errors.js";
import { SECRET_COLUMNS, reencryptFailedNote, reencryptedLine, secretFields, secretRows } from "../format/secrets.js";
import { listCommand } from "../list-command.js";
import { approvalBody } from "./apply.js";
import type { CliIO, Writer } from "../output.js";

/** What `set` reads from: process.stdin, or a stand-in given on the io object (tests). */
export interface SecretInput extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

const MAX_VALUE_BYTES = 64 * 1024;

function inputOf(io: CliIO): SecretInput {
  return (io as CliIO & { stdin?: SecretInput }).stdin ?? process.stdin;
}

/** Reads piped stdin to the end; one trailing newline (from `echo`) is dropped unless asked not to. */
export async function readPiped(input: SecretInput, keepNewline: boolean): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const b = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    size += b.length;
    if (size > MAX_VALUE_BYTES + 2)
      throw new CliError(`the value on stdin exceeds ${MAX_VALUE_BYTES} bytes`, "value_too_large");
    chunks.push(b);
  }
  const raw = Buffer.concat(chunks);
  let value = raw.toString("utf8");
  // Decoding would silently replace invalid bytes; a binary value must be encoded (e.g. base64) first.
  if (!Buffer.from(value, "utf8").equals(raw))
    throw new CliError(
      "the value on stdin is not valid UTF-8 text; encode binary values (e.g. base64) first",
      "invalid_value",
    );
  if (!keepNewline) value = value.replace(/\r?\n$/, "");
  return value;
}

/** One line from the terminal with echo off (raw mode), the prompt on stderr. */
export function promptHidden(input: SecretInput, out: Writer, label: string): Promise<string> {
  if (!input.setRawMode) throw new CliError("cannot read a hidden value: stdin is not a terminal", "no_tty");
  // Echo goes off before the prompt shows, so nothing typed in answer to it is ever echoed.
  input.setRawMode(true);
  out.write(label);
  input.setEncoding("utf8");
  input.resume();
  return new Promise((resolve, reject) => {
    let buf: string[] = [];
    const finish = (err?: CliError) => {
      input.removeListener("data", onData);
      input.setRawMode!(false);
      input.pause();
      out.write("\n");
      if (err) reject(err);
      else resolve(buf.join(""));
    };
    const onData = (chunk: string | Buffer) => {
      for (const ch of String(chunk)) {
        if (ch === "\r" || ch === "\n") return finish();
        if (ch === "\u0003") return finish(new CliError("aborted", "aborted"));
        if (ch === "\u0004") return buf.length ? finish() : finish(new CliError("aborted", "aborted"));
        if (ch === "\u007f" || ch === "\b") buf = buf.slice(0, -1);
        else if (ch === "\u0015") buf = [];
        else buf.push(ch);
      }
    };
    input.on("data", onData);
  });
}

async function readValue(ctx: Context, keepNewline: boolean): Promise<string> {
  const input = inputOf(ctx.io);
  let value: string;
  if (input.isTTY) {
    value = await promptHidden(input, ctx.io.stderr, "Value (input hidden): ");
    const again = await promptHidden(input, ctx.io.stderr, "Repeat value: ");
    if (again !== value) throw new CliError("the two values differ; nothing was changed", "value_mismatch");
  } else {
    value = await readPiped(input, keepNewline);
  }
  if (value === "")
    throw new CliError("empty value: pipe the value on stdin or type it at the prompt", "invalid_value");
  return value;
}

function parseTags(tags: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of tags) {
    const eq = t.indexOf("=");
    if (eq <= 0) throw new CliError(`--tag expects key=value, got ${JSON.stringify(t)}`, "invalid_argument");
    out[t.slice(0, eq)] = t.slice(eq + 1);
  }
  return out;
}

interface ApprovalOptions {
  reason?: string;
  breakGlass?: boolean;
}

interface SetOptions extends ApprovalOptions {
  description?: string;
  expiresAt?: string;
  node: string[];
  tag: string[];
  unrestricted?: boolean;
  keepNewline?: boolean;
}

const collect = (v: string, prev: string[]) => [...prev, v];
const path = (name: string) => ({ params: { path: { name } } });
type SecretUpdate = RequestBody<"/api/v1/secrets/{name}", "put">;

type Sub = (parent: Command, io: CliIO) => void;

/** The 202 of a write an approval policy held (secret.write): nothing changed yet. */
interface HeldWrite {
  status: "held";
  change_request_id: string;
  summary: string;
}
const isHeld = (b: unknown): b is HeldWrite => (b as HeldWrite | undefined)?.status === "held";

/** Prints a held write (the API's body with --json); exit 0: the request is what was asked for. */
function printHeld(ctx: Context, held: HeldWrite): void {
  const id = held.change_request_id;
  ctx.out.result(held, () =>
    ctx.out.line(`secret write held for approval: change request ${id} — orchctl requests show ${id}`),
  );
}

const withApprovalOptions = (cmd: Command) =>
  cmd
    .option("--reason <text>", "why (kept with the change request when an approval policy holds the write)")
    .option("--break-glass", "admins: write without the approval a policy asks for (needs --reason; audited)");

const set: Sub = (sec, io) =>
  withApprovalOptions(sec.command("set"))
    .description("create a secret, or replace its value (value from stdin, else a hidden prompt)")
    .argument("<name>", "secret name")
    .option("--description <text>", "description (empty string clears it)")
    .option("--expires-at <time>", "RFC 3339 expiry, or 'never'")
    .option("--node <agent>", "allow this agent: name, node id or short id (repeatable)", collect, [])
    .option("--tag <key=value>", "allow agents carrying every given tag (repeatable)", collect, [])
    .option("--unrestricted", "remove any restriction: every approved agent may receive it")
    .option("--keep-newline", "keep a trailing newline read from stdin")
    .action(
      action(io, async (ctx, name: string, opts: SetOptions) => {
        if (opts.unrestricted && (opts.node.length || opts.tag.length))
          throw new CliError("--unrestricted cannot be combined with --node or --tag", "invalid_argument");
        const approval = approvalBody(opts);
        const tags = parseTags(opts.tag);
        // Before the value is asked for, so a mistyped agent does not cost a prompt.
        const nodeIds = await Promise.all(opts.node.map((ref) => nodeIdOrRef(ctx, ref)));
        const value = await readValue(ctx, Boolean(opts.keepNewline));
        const meta: Omit<SecretUpdate, "value"> = {};
        if (opts.description !== undefined) meta.description = opts.description === "" ? null : opts.description;
        if (opts.expiresAt !== undefined) meta.expires_at = opts.expiresAt === "never" ? null : opts.expiresAt;
        if (opts.node.length || opts.tag.length) meta.restriction = { node_ids: nodeIds, tags };
        else if (opts.unrestricted) meta.restriction = null;
        let created = true;
        let secret: SecretMeta | HeldWrite;
        try {
          secret = unwrap(await ctx.api.POST("/api/v1/secrets", { body: { name, value, ...meta, ...approval } }));
        } catch (err) {
          if (!(err instanceof ProblemError) || err.problem.code !== "secret_exists") throw err;
          created = false;
          secret = unwrap(
            await ctx.api.PUT("/api/v1/secrets/{name}", { ...path(name), body: { value, ...meta, ...approval } }),
          );
        }
        if (isHeld(secret)) return printHeld(ctx, secret);
        ctx.out.result({ action: created ? "created" : "updated", secret }, () =>
          ctx.out.line(`${created ? "Created" : "Updated"} secret ${secret.name}`),
        );
      }),
    );

const list: Sub = (sec, io) =>
  listCommand<"secrets", SecretPage>(sec, io, {
    key: "secrets",
    command: "secrets list",
    description: "list secrets (metadata only)",
    alias: "ls",
    cursorHelp: "continue from a previous page's next_cursor",
    fetch: async (ctx, query): Promise<SecretPage> =>
      unwrap(await ctx.api.GET("/api/v1/secrets", { params: { query } })),
    columns: SECRET_COLUMNS,
    rows: secretRows,
  });

const show: Sub = (sec, io) =>
  sec
    .command("show")
    .description("show one secret's metadata (never its value)")
    .argument("<name>", "secret name")
    .action(
      action(io, async (ctx, name: string) => {
        const s = unwrap(await ctx.api.GET("/api/v1/secrets/{name}", path(name)));
        const [names, agents] = await Promise.all([operatorNames(ctx), agentNames(ctx, s.restriction?.node_ids ?? [])]);
        ctx.out.result(s, () => ctx.out.fields(secretFields(s, names, agents)));
      }),
    );

const remove: Sub = (sec, io) =>
  withApprovalOptions(sec.command("rm"))
    .alias("remove")
    .description("delete a secret")
    .argument("<name>", "secret name")
    .action(
      action(io, async (ctx, name: string, opts: ApprovalOptions) => {
        const approval = approvalBody(opts);
        const r: unknown = unwrap(await ctx.api.DELETE("/api/v1/secrets/{name}", { ...path(name), body: approval }));
        if (isHeld(r)) return printHeld(ctx, r);
        ctx.out.result({ deleted: true, name }, () => ctx.out.line(`Deleted secret ${name}`));
      }),
    );

const reencrypt: Sub = (sec, io) =>
  sec
    .command("reencrypt")
    .description("re-encrypt every secret with the active key (admin)")
    .action(
      action(io, async (ctx) => {
        const r = unwrap(await ctx.api.POST("/api/v1/secrets/reencrypt"));
        ctx.out.result(r, () => {
          ctx.out.line(reencryptedLine(r));
          const failed = reencryptFailedNote(r);
          if (failed) ctx.out.note(failed);
        });
      }),
    );

export function register(program: Command, io: CliIO): void {
  const sec = program.command("secrets").description("manage secrets (values are write-only)");
  for (const sub of [set, list, show, remove, reencrypt]) sub(sec, io);
}
