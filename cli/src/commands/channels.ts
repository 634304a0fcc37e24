/** orchctl channels list | add | show | update | test | deliveries | rm */
import { readFile } from "node:fs/promises";
import { Option, type Command } from "commander";
import { action, type Context } from "../context.js";
import { CliError } from "../errors.js";
import type { CliIO } from "../output.js";

export interface Channel {
  id: string;
  name: string;
  channel_type: string;
  config: Record<string, unknown>;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: number;
  created_by: string;
  updated_at: number;
}

interface ChannelPage {
  channels: Channel[];
  has_more: boolean;
  next_cursor: string | null;
}

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

const target = (c: Channel) =>
  String(
    c.config.url ??
      c.config.webhook_url ??
      (c.config.topic ? `${String(c.config.server_url ?? "")}/${String(c.config.topic)}` : ""),
  );

function show(ctx: Context, c: Channel, verb?: string): void {
  ctx.out.result(c, () => {
    if (verb) ctx.out.line(`${verb} ${c.channel_type} channel ${c.name}, id ${c.id}`);
    ctx.out.fields([
      ["name", c.name],
      ["id", c.id],
      ["type", c.channel_type],
      ["enabled", c.enabled ? "yes" : `no (${c.disabled_reason ?? ""})`],
      ["target", target(c)],
      ["min_severity", c.config.min_severity ?? "warning"],
      ["event_types", Array.isArray(c.config.event_types) ? c.config.event_types.join(",") : "all"],
      ["config", JSON.stringify(c.config)],
      ["created_at", new Date(c.created_at * 1000).toISOString()],
      ["created_by", c.created_by],
    ]);
    const secret = c.config.secret;
    if (typeof secret === "string" && secret.startsWith("whsec_") && !secret.includes("****")) {
      ctx.out.line("");
      ctx.out.line(`webhook secret (shown once, store it now): ${secret}`);
    }
  });
}

const path = (ref: string) => `/channels/${encodeURIComponent(ref)}`;

export function register(program: Command, io: CliIO): void {
  const ch = program.command("channels").description("notification channels: webhook, discord, slack, ntfy");

  ch.command("list")
    .description("list channels")
    .option("--limit <n>", "page size")
    .option("--cursor <cursor>", "continue from a previous page's next_cursor")
    .action(
      action(io, async (ctx, opts: { limit?: string; cursor?: string }) => {
        const page = await ctx.api<ChannelPage>("GET", "/channels", undefined, {
          auth: true,
          query: { limit: positiveInt("--limit", opts.limit), cursor: opts.cursor },
        });
        ctx.out.result(page, () => {
          ctx.out.table(
            ["NAME", "ID", "TYPE", "ENABLED", "MIN SEVERITY", "TARGET"],
            page.channels.map((c) => [
              c.name,
              c.id,
              c.channel_type,
              c.enabled ? "yes" : "no",
              c.config.min_severity ?? "warning",
              target(c),
            ]),
          );
          if (page.has_more && page.next_cursor)
            ctx.out.note(`more channels: orchctl channels list --cursor ${page.next_cursor}`);
        });
      }),
    );

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
      const c = await ctx.api<Channel>(
        "POST",
        "/channels",
        { name, channel_type: opts.type, config: await configFrom(opts) },
        { auth: true },
      );
      show(ctx, c, "Added");
    }),
  );

  ch.command("show")
    .alias("get")
    .description("show one channel (credentials masked)")
    .argument("<id-or-name>")
    .action(
      action(io, async (ctx, ref: string) =>
        show(ctx, await ctx.api<Channel>("GET", path(ref), undefined, { auth: true })),
      ),
    );

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
        const body: Record<string, unknown> = {};
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
          const cur = await ctx.api<Channel>("GET", path(ref), undefined, { auth: true });
          body.config = await configFrom(opts, cur.config);
          if (opts.rotateSecret) (body.config as Record<string, unknown>).secret = null;
        }
        if (Object.keys(body).length === 0)
          throw new CliError("nothing to update: give --name, --enable/--disable or config flags", "invalid_argument");
        show(ctx, await ctx.api<Channel>("PUT", path(ref), body, { auth: true }), "Updated");
      },
    ),
  );

  ch.command("test")
    .description("send a test notification through the channel now (admin)")
    .argument("<id-or-name>")
    .action(
      action(io, async (ctx, ref: string) => {
        const r = await ctx.api<{
          delivered: boolean;
          status_code: number | null;
          response_snippet: string | null;
          error: string | null;
        }>("POST", `${path(ref)}/test`, undefined, { auth: true });
        ctx.out.result(r, () =>
          ctx.out.fields([
            ["delivered", r.delivered ? "yes" : "no"],
            ["status_code", r.status_code],
            ["response", r.response_snippet],
            ["error", r.error],
          ]),
        );
      }),
    );

  ch.command("deliveries")
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
        type D = {
          id: string;
          event_type: string;
          severity: string;
          status: string;
          attempts: number;
          last_status_code: number | null;
          last_error: string | null;
          created_at_ms: number;
        };
        const page = await ctx.api<{ deliveries: D[]; has_more: boolean; next_cursor: string | null }>(
          "GET",
          `${path(ref)}/deliveries`,
          undefined,
          {
            auth: true,
            query: { status: opts.status, limit: positiveInt("--limit", opts.limit), cursor: opts.cursor },
          },
        );
        ctx.out.result(page, () => {
          ctx.out.table(
            ["ID", "CREATED", "EVENT", "SEVERITY", "STATUS", "ATTEMPTS", "LAST"],
            page.deliveries.map((d) => [
              d.id,
              new Date(d.created_at_ms).toISOString(),
              d.event_type,
              d.severity,
              d.status,
              d.attempts,
              d.last_error ?? d.last_status_code,
            ]),
          );
          if (page.has_more && page.next_cursor) ctx.out.note(`more: --cursor ${page.next_cursor}`);
        });
      }),
    );

  ch.command("rm")
    .alias("remove")
    .description("delete a channel and its deliveries (admin)")
    .argument("<id-or-name>")
    .action(
      action(io, async (ctx, ref: string) => {
        const c = await ctx.api<Channel>("GET", path(ref), undefined, { auth: true });
        await ctx.api("DELETE", path(c.id), undefined, { auth: true });
        ctx.out.result({ removed: true, channel: c }, () => ctx.out.line(`Removed channel ${c.name} (${c.id})`));
      }),
    );
}
