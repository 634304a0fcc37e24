/**
 * orchctl sources add | list | get | rm | sync | plan — git repositories whose modules/ and
 * assignments/ the orchestrator syncs (docs/sources.md). Credentials never come from argv (it
 * shows in `ps` and shell history): a token from an environment variable or a file, an SSH key
 * from a file, a webhook secret from an environment variable.
 */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { type RequestBody, unwrap } from "@orch/client";
import { SOURCE_PLAN_WAIT_DEFAULT_S, SOURCE_PLAN_WAIT_MAX_S, SOURCE_SYNC_WAIT_S } from "@orch/contracts";
import { action, type Context } from "../context.js";
import { operatorNames } from "../operator-names.js";
import { CliError, ExitStatus } from "../errors.js";
import {
  createdLines,
  planLines,
  SOURCE_COLUMNS,
  sourceFields,
  fileErrorLines,
  sourceRows,
  syncLines,
} from "../format/sources.js";
import { count } from "../format/units.js";
import { apiUrl } from "../http.js";
import type { CliIO } from "../output.js";
import { listCommand } from "../list-command.js";
import { printLines, useColor } from "./apply.js";

/** A sync or plan fetches from git before it answers; the server waits for a sync at most this long. */
const GIT_ALLOWANCE_MS = SOURCE_SYNC_WAIT_S * 1000;

type Sub = (parent: Command, io: CliIO) => void;
const byName = (name: string) => ({ params: { path: { name } } });

async function readSecretFile(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    throw new CliError(
      `cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      "file_unreadable",
    );
  }
}

function fromEnv(ctx: Context, name: string, flag: string): string {
  const v = ctx.env[name];
  if (!v) throw new CliError(`${flag}: environment variable ${name} is not set or empty`, "invalid_argument");
  return v;
}

function int(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new CliError(`${flag} must be a whole number of seconds`, "invalid_argument");
  return Number(v);
}

interface AddOpts {
  url: string;
  branch?: string;
  path?: string;
  interval?: string;
  tokenEnv?: string;
  tokenFile?: string;
  username?: string;
  sshKey?: string;
  webhookSecretEnv?: string;
}

/** The POST /sources body from the command line and the environment. */
export async function addBody(ctx: Context, name: string, o: AddOpts): Promise<RequestBody<"/api/v1/sources", "post">> {
  const given = [o.tokenEnv, o.tokenFile, o.sshKey].filter((x) => x !== undefined).length;
  if (given > 1) throw new CliError("give one of --token-env, --token-file or --ssh-key", "invalid_argument");
  if (o.username !== undefined && o.tokenEnv === undefined && o.tokenFile === undefined)
    throw new CliError("--username goes with --token-env or --token-file", "invalid_argument");
  let auth: RequestBody<"/api/v1/sources", "post">["auth"];
  if (o.tokenEnv !== undefined) auth = { token: fromEnv(ctx, o.tokenEnv, "--token-env") };
  // A token file written by `echo` ends in a newline that is not part of the token.
  if (o.tokenFile !== undefined) auth = { token: (await readSecretFile(o.tokenFile, "token file")).trim() };
  if (o.sshKey !== undefined) auth = { ssh_key: await readSecretFile(o.sshKey, "SSH key") };
  if (auth && o.username !== undefined) auth.username = o.username;
  const interval = int(o.interval, "--interval");
  return {
    name,
    url: o.url,
    ...(o.branch !== undefined ? { branch: o.branch } : {}),
    ...(o.path !== undefined ? { path: o.path } : {}),
    ...(interval !== undefined ? { interval_s: interval } : {}),
    ...(auth ? { auth } : {}),
    ...(o.webhookSecretEnv !== undefined
      ? { webhook_secret: fromEnv(ctx, o.webhookSecretEnv, "--webhook-secret-env") }
      : {}),
  };
}

const add: Sub = (src, io) =>
  src
    .command("add")
    .description("register a git repository; prints the webhook URL and (once) its secret")
    .argument("<name>", "source name")
    .requiredOption("--url <url>", "https://…, ssh://…, git@host:repo, or file:///… where the server allows it")
    .option("--branch <branch>", "branch to sync (default main)")
    .option("--path <dir>", "directory holding modules/ and assignments/ (default: the repository root)")
    .option("--interval <seconds>", "seconds between scheduled syncs (default: the server's)")
    .option("--token-env <VAR>", "https token from this environment variable")
    .option("--token-file <file>", "https token from this file")
    .option("--username <user>", "basic-auth user for the token (default x-access-token)")
    .option("--ssh-key <file>", "SSH private deploy key file (ssh URLs)")
    .option("--webhook-secret-env <VAR>", "webhook secret from this environment variable (default: generated)")
    .action(
      action(io, async (ctx, name: string, opts: AddOpts) => {
        const body = await addBody(ctx, name, opts);
        const s = unwrap(await ctx.api.POST("/api/v1/sources", { body }));
        const webhookUrl = apiUrl(await ctx.orch.server(), `/sources/${encodeURIComponent(s.name)}/webhook`);
        ctx.out.result({ ...s, webhook_url: webhookUrl }, () => {
          for (const l of createdLines(s, webhookUrl, opts.webhookSecretEnv)) ctx.out.line(l);
        });
      }),
    );

const list: Sub = (src, io) =>
  listCommand(src, io, {
    key: "sources",
    command: "sources list",
    description: "list git sources with their sync status",
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/sources", { params: { query } })),
    columns: SOURCE_COLUMNS,
    rows: sourceRows,
  });

const get: Sub = (src, io) =>
  src
    .command("get")
    .alias("show")
    .description("one git source: the commit in force, the last attempt and its per-file errors")
    .argument("<name>", "source name")
    .action(
      action(io, async (ctx, name: string) => {
        const s = unwrap(await ctx.api.GET("/api/v1/sources/{name}", byName(name)));
        const names = await operatorNames(ctx);
        ctx.out.result(s, () => {
          ctx.out.fields(sourceFields(s, names));
          if (s.errors.length) {
            ctx.out.line("errors:");
            for (const l of fileErrorLines(s.errors)) ctx.out.line(l);
          }
        });
      }),
    );

const remove: Sub = (src, io) =>
  src
    .command("rm")
    .alias("remove")
    .description("delete a git source (the modules and assignments it managed stay, unmanaged)")
    .argument("<name>", "source name")
    .action(
      action(io, async (ctx, name: string) => {
        unwrap(await ctx.api.DELETE("/api/v1/sources/{name}", byName(name)));
        ctx.out.result({ removed: true, name }, () => ctx.out.line(`Deleted git source ${name}`));
      }),
    );

const sync: Sub = (src, io) =>
  src
    .command("sync")
    .description("fetch the source's branch now and apply it, all or nothing; exits 1 when the sync failed")
    .argument("<name>", "source name")
    .action(
      action(io, async (ctx, name: string) => {
        const api = ctx.orch.client(true, { timeoutMs: ctx.timeoutMs + GIT_ALLOWANCE_MS });
        const s = unwrap(await api.POST("/api/v1/sources/{name}/sync", byName(name)));
        ctx.out.result(s, () => printLines(ctx, syncLines(s)));
        if (s.status === "error") throw new ExitStatus(`sync of ${name} failed: ${s.error}`, "source_sync_failed", 1);
      }),
    );

const plan: Sub = (src, io) =>
  src
    .command("plan")
    .description(
      "plan the fleet against a branch or commit without syncing it: per assignment, per agent diffs; exits 1 when the tree has errors",
    )
    .argument("<name>", "source name")
    .option("--ref <ref>", "branch name or commit SHA (default: the source's branch)")
    .option(
      "--wait <seconds>",
      `wait for the agents' plans (default ${SOURCE_PLAN_WAIT_DEFAULT_S}, at most ${SOURCE_PLAN_WAIT_MAX_S})`,
    )
    .action(
      action(io, async (ctx, name: string, opts: { ref?: string; wait?: string }) => {
        const wait = int(opts.wait, "--wait");
        const api = ctx.orch.client(true, {
          timeoutMs: ctx.timeoutMs + GIT_ALLOWANCE_MS + (wait ?? SOURCE_PLAN_WAIT_DEFAULT_S) * 1000,
        });
        const p = unwrap(
          await api.POST("/api/v1/sources/{name}/plan", {
            ...byName(name),
            body: {
              ...(opts.ref !== undefined ? { ref: opts.ref } : {}),
              ...(wait !== undefined ? { wait_seconds: wait } : {}),
            },
          }),
        );
        ctx.out.result(p, () => printLines(ctx, planLines(p, useColor(ctx))));
        if (p.errors.length)
          throw new ExitStatus(`the tree at ${p.ref} has ${count(p.errors.length, "error")}`, "invalid_source", 1);
      }),
    );

export function register(program: Command, io: CliIO): void {
  const src = program.command("sources").description("git sources: modules and assignments synced from a repository");
  for (const sub of [add, list, get, remove, sync, plan]) sub(src, io);
}
