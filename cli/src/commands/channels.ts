/** orchctl channels list | add | show | update | test | deliveries | rm */
import { readFile } from "node:fs/promises";
import { Option, type Command } from "commander";
import { unwrap, type Channel, type QueryParams, type RequestBody } from "@orch/client";
import { action, type Context } from "../context.js";
import { operatorNames } from "../operator-names.js";
import { CliError, ExitStatus } from "../errors.js";
import {
  CHANNEL_COLUMNS,
  DELIVERY_COLUMNS,
  channelFields,
  channelRows,
  channelSecretLine,
  channelTestFailure,
  channelTestFields,
  channelVerbLine,
  deliveryRows,
} from "../format/channels.js";
import type { CliIO } from "../output.js";

interface ConfigFlags {
  config?: string;
  url?: string;
  secret?: string;
  header?: string[];
  webhookUrl?: string;
  serverUrl?: string;
  topic?: string;
  token?: string;
  priority?: string;
  minSeverity?: string;
  eventTypes?: string;
}

const SEVERITIES = ["info", "warning", "error", "critical"];

function positiveInt(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`${flag} must be a positive integer, got ${JSON.stringify(v)}`, "invalid_argument");
  return n;
}

/** `--config` as inline JSON or `@file`, then the per-field flags on top. */
async function configFrom(flags: ConfigFlags, base: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  let cfg: Record<string, unknown> = { ...base };
  if (flags.config !== undefined) {
    const text = flags.config.startsWith("@") ? await readFile(flags.config.slice(1), "utf8") : flags.config;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new CliError("--config must be a JSON object (or @file containing one)", "invalid_argument");
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
      throw new CliError("--config must be a JSON object", "invalid_argument");
    cfg = { ...cfg, ...(parsed as Record<string, unknown>) };
  }
  const set = (k: string, v: unknown) => {
    if (v !== undefined) cfg[k] = v;
  };
  set("url", flags.url);
  set("secret", flags.secret);
  set("webhook_url", flags.webhookUrl);
  set("server_url", flags.serverUrl);
  set("topic", flags.topic);
  set("token", flags.token);
  set("priority", positiveInt("--priority", flags.priority));
  set("min_severity", flags.minSeverity);
  if (flags.eventTypes !== undefined)
    cfg.event_types = flags.eventTypes
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  if (flags.header?.length) {
    const headers: Record<string, string> = { ...((cfg.headers as Record<string, string> | undefined) ?? {}) };
    for (const h of flags.header) {
      const i = h.indexOf("=");
      if (i < 1) throw new CliError(`--header must be NAME=VALUE, got ${JSON.stringify(h)}`, "invalid_argument");
      headers[h.slice(0, i)] = h.slice(i + 1);
    }
    cfg.headers = headers;
  }
  return cfg;
}

function configOptions(cmd: Command): Command {
  return cmd
    .option("--config <json>", "the whole config as JSON, or @file")
    .option("--url <url>", "webhook: target URL")
    .option("--secret <whsec>", "webhook: Standard Webhooks secret (whsec_...); generated when omitted")
    .option("--header <name=value>", "webhook: extra header (repeatable)", (v: string, prev: string[] = []) => [
      ...prev,
      v,
    ])
    .option("--webhook-url <url>", "discord/slack: the incoming-webhook URL")
    .option("--server-url <url>", "ntfy: server (default https://ntfy.sh)")
    .option("--topic <topic>", "ntfy: topic")
    .option("--token <token>", "ntfy: access token")
    .option("--priority <1-5>", "ntfy: fixed priority (default: from severity)")
    .addOption(
      new Option("--min-severity <severity>", "deliver events at or above this severity (default warning)").choices(
        SEVERITIES,
      ),
    )
    .option("--event-types <prefixes>", "comma-separated event type prefixes to deliver (default all)");
}

async function showChannel(ctx: Context, c: Channel, verb?: string): Promise<void> {
  const names = await operatorNames(ctx);
  ctx.out.result(c, () => {
    if (verb) ctx.out.line(channelVerbLine(verb, c));
    ctx.out.fields(channelFields(c, names));
    const secret = channelSecretLine(c);
    if (secret) {
      ctx.out.line("");
      ctx.out.line(secret);
    }
  });
}

const path = (id: string) => ({ params: { path: { id } } });

type Sub = (parent: Command, io: CliIO) => void;

const list: Sub = (ch, io) =>
  ch
    .command("list")
    .description("list channels")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string }) => {
        const query = { limit: positiveInt("--limit", opts.limit), cursor: opts.cursor };
        const page = unwrap(await ctx.api.GET("/api/v1/channels", { params: { query } }));
        ctx.out.result(page, () => {
          ctx.out.table(CHANNEL_COLUMNS, channelRows(page.channels));
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more channels: orchctl channels list --cursor ${page.next_cursor}`);
        });
      }),
    );

const add: Sub = (ch, io) =>
  configOptions(
    ch
      .command("add")
      .description("add a channel (admin)")
      .argument("<name>", "channel name")
      .addOption(
        new Option("--type <type>", "channel type")
          .choices(["webhook", "discord", "slack", "ntfy"])
          .makeOptionMandatory(),
      ),
  ).action(
    action(io, async (ctx, name: string, opts: ConfigFlags & { type: string }) => {
      const config = await configFrom(opts);
      // Whether the target is reachable is the server's policy (notify.allow_private_targets), not
      // something to guess from here: `channels test` asks it, and its refusal names the setting.
      const c = unwrap(await ctx.api.POST("/api/v1/channels", { body: { name, channel_type: opts.type, config } }));
      await showChannel(ctx, c, "Added");
    }),
  );

const show: Sub = (ch, io) =>
  ch
    .command("show")
    .alias("get")
    .description("show one channel (credentials masked)")
    .argument("<id-or-name>")
    .action(
      action(io, async (ctx, ref: string) =>
        showChannel(ctx, unwrap(await ctx.api.GET("/api/v1/channels/{id}", path(ref)))),
      ),
    );

const update: Sub = (ch, io) =>
  configOptions(
    ch
      .command("update")
      .description("change a channel's name, config or enabled flag (admin); config flags edit the current config")
      .argument("<id-or-name>")
      .option("--name <name>", "new name")
      .option("--enable", "enable the channel (e.g. after a 410 disabled it)")
      .option("--disable", "disable the channel")
      .option("--rotate-secret", "webhook: generate a new secret (shown once)"),
  ).action(
    action(
      io,
      async (
        ctx,
        ref: string,
        opts: ConfigFlags & { name?: string; enable?: boolean; disable?: boolean; rotateSecret?: boolean },
      ) => {
        if (opts.enable && opts.disable)
          throw new CliError("--enable and --disable exclude each other", "invalid_argument");
        const body: RequestBody<"/api/v1/channels/{id}", "put"> = {};
        if (opts.name) body.name = opts.name;
        if (opts.enable || opts.disable) body.enabled = Boolean(opts.enable);
        const touchesConfig = [
          "config",
          "url",
          "secret",
          "header",
          "webhookUrl",
          "serverUrl",
          "topic",
          "token",
          "priority",
          "minSeverity",
          "eventTypes",
        ].some((k) => (opts as Record<string, unknown>)[k] !== undefined);
        if (touchesConfig || opts.rotateSecret) {
          // Start from the current (masked) config: masked credentials are kept by the server.
          const cur = unwrap(await ctx.api.GET("/api/v1/channels/{id}", path(ref)));
          body.config = await configFrom(opts, cur.config);
          if (opts.rotateSecret) (body.config as Record<string, unknown>).secret = null;
        }
        if (Object.keys(body).length === 0)
          throw new CliError("nothing to update: give --name, --enable/--disable or config flags", "invalid_argument");
        const c = unwrap(await ctx.api.PUT("/api/v1/channels/{id}", { ...path(ref), body }));
        await showChannel(ctx, c, "Updated");
      },
    ),
  );

const test: Sub = (ch, io) =>
  ch
    .command("test")
    .description("send a test notification through the channel now (admin)")
    .argument("<id-or-name>")
    .action(
      action(io, async (ctx, ref: string) => {
        const r = unwrap(await ctx.api.POST("/api/v1/channels/{id}/test", path(ref)));
        ctx.out.result(r, () => ctx.out.fields(channelTestFields(r)));
        // A refused or failed send is the answer a script checks for: exit 1, the reason on stderr.
        if (!r.delivered) throw new ExitStatus(channelTestFailure(ref, r), "channel_test_failed", 1);
      }),
    );

const deliveries: Sub = (ch, io) =>
  ch
    .command("deliveries")
    .description("list a channel's deliveries, newest first")
    .argument("<id-or-name>")
    .addOption(
      new Option("--status <status>", "only this status").choices([
        "pending",
        "in_flight",
        "delivered",
        "failed",
        "suppressed",
        "cancelled",
      ]),
    )
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .action(
      action(io, async (ctx, ref: string, opts: { status?: string; limit?: string; cursor?: string }) => {
        // The server validates --status (invalid_request names the field).
        const query = {
          status: opts.status,
          limit: positiveInt("--limit", opts.limit),
          cursor: opts.cursor,
        } as QueryParams<"/api/v1/channels/{id}/deliveries", "get">;
        const page = unwrap(
          await ctx.api.GET("/api/v1/channels/{id}/deliveries", { params: { ...path(ref).params, query } }),
        );
        ctx.out.result(page, () => {
          ctx.out.table(DELIVERY_COLUMNS, deliveryRows(page.deliveries));
          if (page.has_more && page.next_cursor) ctx.out.note(`more: --cursor ${page.next_cursor}`);
        });
      }),
    );

const remove: Sub = (ch, io) =>
  ch
    .command("rm")
    .alias("remove")
    .description("delete a channel and its deliveries (admin)")
    .argument("<id-or-name>")
    .action(
      action(io, async (ctx, ref: string) => {
        const c = unwrap(await ctx.api.GET("/api/v1/channels/{id}", path(ref)));
        unwrap(await ctx.api.DELETE("/api/v1/channels/{id}", path(c.id)));
        ctx.out.result({ removed: true, channel: c }, () => ctx.out.line(`Removed channel ${c.name} (${c.id})`));
      }),
    );

export function register(program: Command, io: CliIO): void {
  const ch = program.command("channels").description("notification channels: webhook, discord, slack, ntfy");
  for (const sub of [list, add, show, update, test, deliveries, remove]) sub(ch, io);
}
