/**
 * orchctl identity-providers list | get | put | delete (admin; docs/sso.md)
 *
 * `put <name>` takes the provider from a YAML or JSON file (-f, the API's field names) and/or
 * flags; with flags alone it changes the stored provider (or creates one). The client secret is
 * never a flag value (shell history, `ps`): it comes from --client-secret-file (`-` = stdin) or
 * $ORCH_SSO_CLIENT_SECRET, and is never shown.
 */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
import { unwrap, type RequestBody, type ResponseBody } from "@orch/client";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import type { CliIO } from "../output.js";
import { readPiped, type SecretInput } from "./secrets.js";

export type IdentityProvider = ResponseBody<"/api/v1/identity-providers/{name}", "get">;
type PutBody = RequestBody<"/api/v1/identity-providers/{name}", "put">;
type Rule = IdentityProvider["rules"][number];

const path = (name: string) => ({ params: { path: { name } } });
const collect = (v: string, prev: string[] | undefined) => [...(prev ?? []), v];

export const PROVIDER_COLUMNS = ["NAME", "DISPLAY NAME", "ISSUER", "ENABLED", "DEVICE FLOW", "RULES"] as const;

export function providerRows(ps: readonly IdentityProvider[]): string[][] {
  return ps.map((p) => [
    p.name,
    p.display_name,
    p.issuer,
    p.enabled ? "yes" : "no",
    p.device_flow ? "yes" : "no",
    String(p.rules.length),
  ]);
}

/** One rule as a line: `ops: groups ops → operator, scope env=prod`. */
export function ruleLine(r: Rule, i: number): string {
  const when = [
    r.groups.length ? `groups ${r.groups.join("|")}` : "",
    r.email ? `email ${r.email}` : "",
    r.domains.length ? `domains ${r.domains.join("|")}` : "",
  ].filter(Boolean);
  const scope = r.role === "operator" ? `, scope ${r.agent_selector ?? "(every agent)"}` : "";
  return `${i}. ${r.name || `rule ${i}`}: ${when.join(", ") || "anyone"} → ${r.role}${scope}`;
}

export function providerFields(p: IdentityProvider): [string, unknown][] {
  return [
    ["name", p.name],
    ["display name", p.display_name],
    ["issuer", p.issuer],
    ["client id", p.client_id],
    ["client secret", p.has_client_secret ? "(stored, sealed)" : "(none: public client)"],
    ["scopes", p.scopes.join(" ")],
    ["groups claim", p.groups_claim],
    ["allowed domains", p.allowed_domains.join(", ") || "(any)"],
    ["refresh interval", `${p.refresh_interval_seconds}s`],
    ["enabled", p.enabled ? "yes" : "no"],
    ["device flow", p.device_flow ? "yes" : "no"],
    ["created", p.created_at],
    ["updated", p.updated_at],
  ];
}

interface PutOptions {
  file?: string;
  displayName?: string;
  issuer?: string;
  clientId?: string;
  clientSecretFile?: string;
  clearClientSecret?: boolean;
  scope?: string[];
  groupsClaim?: string;
  allowedDomain?: string[];
  refreshInterval?: string;
  enable?: boolean;
  disable?: boolean;
}

function inputOf(io: CliIO): SecretInput {
  return (io as CliIO & { stdin?: SecretInput }).stdin ?? process.stdin;
}

/** The provider body a file holds (YAML or JSON, the API's field names). */
async function fromFile(file: string): Promise<Partial<PutBody>> {
  let doc: unknown;
  try {
    doc = parseYaml(await readFile(file, "utf8"));
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`, "invalid_argument");
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc))
    throw new CliError(`${file} must hold a mapping (the provider's fields)`, "invalid_argument");
  const body = doc as Record<string, unknown>;
  if ("client_secret" in body)
    throw new CliError(
      `${file} holds client_secret: keep secrets out of files; use --client-secret-file or $ORCH_SSO_CLIENT_SECRET`,
      "invalid_argument",
    );
  delete body.name;
  return body as Partial<PutBody>;
}

/** The stored provider as a body for PUT (what flags alone change), or {} when there is none. */
async function fromServer(ctx: Context, name: string): Promise<Partial<PutBody>> {
  try {
    const p = unwrap(await ctx.api.GET("/api/v1/identity-providers/{name}", path(name)));
    return {
      display_name: p.display_name,
      issuer: p.issuer,
      client_id: p.client_id,
      scopes: p.scopes,
      groups_claim: p.groups_claim,
      allowed_domains: p.allowed_domains,
      rules: p.rules.map((r) => ({ ...r, email: r.email ?? undefined })),
      refresh_interval_seconds: p.refresh_interval_seconds,
      enabled: p.enabled,
    };
  } catch (err) {
    if (err instanceof ProblemError && err.code === "identity_provider_not_found") return {};
    throw err;
  }
}

async function clientSecret(ctx: Context, opts: PutOptions): Promise<string | undefined> {
  if (opts.clearClientSecret) return "";
  if (opts.clientSecretFile === "-") return (await readPiped(inputOf(ctx.io), false)).trim();
  if (opts.clientSecretFile) {
    try {
      return (await readFile(opts.clientSecretFile, "utf8")).trim();
    } catch (err) {
      throw new CliError(`cannot read ${opts.clientSecretFile}: ${(err as Error).message}`, "invalid_argument");
    }
  }
  return ctx.env.ORCH_SSO_CLIENT_SECRET || undefined;
}

function refreshInterval(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v.replace(/s$/, ""));
  if (!Number.isInteger(n) || n < 0) throw new CliError("--refresh-interval expects whole seconds", "invalid_argument");
  return n;
}

export async function putBody(ctx: Context, name: string, opts: PutOptions): Promise<PutBody> {
  if (opts.enable && opts.disable) throw new CliError("give --enable or --disable, not both", "invalid_argument");
  const base = opts.file ? await fromFile(opts.file) : await fromServer(ctx, name);
  const flags: Partial<PutBody> = {
    display_name: opts.displayName,
    issuer: opts.issuer,
    client_id: opts.clientId,
    scopes: opts.scope,
    groups_claim: opts.groupsClaim,
    allowed_domains: opts.allowedDomain,
    refresh_interval_seconds: refreshInterval(opts.refreshInterval),
    enabled: opts.enable ? true : opts.disable ? false : undefined,
    client_secret: await clientSecret(ctx, opts),
  };
  const body = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(flags)) if (v !== undefined) body[k] = v;
  if (typeof body.issuer !== "string" || typeof body.client_id !== "string")
    throw new CliError(`a new provider needs --issuer and --client-id (or -f <file>)`, "invalid_argument");
  return body as PutBody;
}

type Sub = (parent: Command, io: CliIO) => void;

const list: Sub = (idp, io) =>
  idp
    .command("list")
    .alias("ls")
    .description("list identity providers")
    .action(
      action(io, async (ctx) => {
        const r = unwrap(await ctx.api.GET("/api/v1/identity-providers"));
        ctx.out.result(r, () => {
          if (!r.providers.length) ctx.out.note("no identity providers: add one with orchctl identity-providers put");
          else ctx.out.table(PROVIDER_COLUMNS, providerRows(r.providers));
        });
      }),
    );

function printProvider(ctx: Context, p: IdentityProvider): void {
  ctx.out.fields(providerFields(p));
  ctx.out.line("rules (first match wins):");
  if (!p.rules.length) ctx.out.line("  (none: nobody may sign in)");
  for (const [i, r] of p.rules.entries()) ctx.out.line(`  ${ruleLine(r, i)}`);
}

const get: Sub = (idp, io) =>
  idp
    .command("get")
    .description("show an identity provider and its mapping rules")
    .argument("<name>", "provider name")
    .action(
      action(io, async (ctx, name: string) => {
        const p = unwrap(await ctx.api.GET("/api/v1/identity-providers/{name}", path(name)));
        ctx.out.result(p, () => printProvider(ctx, p));
      }),
    );

const put: Sub = (idp, io) =>
  idp
    .command("put")
    .description("create or replace an identity provider (from -f file.yaml and/or flags)")
    .argument("<name>", "provider name, used in sign-in URLs")
    .option("-f, --file <file>", "YAML or JSON with the provider's fields (issuer, client_id, rules, ...)")
    .option("--display-name <text>", 'sign-in button label ("Sign in with <text>")')
    .option("--issuer <url>", "issuer URL (its discovery document is read)")
    .option("--client-id <id>", "OAuth client id")
    .option("--client-secret-file <file>", "read the client secret from this file (`-` = stdin)")
    .option("--clear-client-secret", "remove the stored client secret (a public client)")
    .option("--scope <scope>", "scope to request (repeat; default openid email profile)", collect)
    .option("--groups-claim <claim>", "claim carrying the groups (default groups)")
    .option("--allowed-domain <domain>", "allowed email domain (repeat; default any)", collect)
    .option("--refresh-interval <seconds>", "seconds between refreshes against the provider")
    .option("--enable", "enable for sign-in")
    .option("--disable", "disable for new sign-ins")
    .action(
      action(io, async (ctx, name: string, opts: PutOptions) => {
        const body = await putBody(ctx, name, opts);
        const p = unwrap(await ctx.api.PUT("/api/v1/identity-providers/{name}", { ...path(name), body }));
        ctx.out.result(p, () => {
          ctx.out.line(`Saved identity provider ${p.name} (${p.enabled ? "enabled" : "disabled"})`);
          printProvider(ctx, p);
        });
      }),
    );

const remove: Sub = (idp, io) =>
  idp
    .command("delete")
    .alias("rm")
    .description("remove an identity provider; the operators it provisioned are deactivated")
    .argument("<name>", "provider name")
    .action(
      action(io, async (ctx, name: string) => {
        const r = unwrap(await ctx.api.DELETE("/api/v1/identity-providers/{name}", path(name)));
        ctx.out.result({ deleted: true, name, ...r }, () =>
          ctx.out.line(`Deleted identity provider ${name}; ${r.deprovisioned} operator(s) deprovisioned`),
        );
      }),
    );

export function register(program: Command, io: CliIO): void {
  const idp = program.command("identity-providers").description("manage single sign-on identity providers (admin)");
  for (const sub of [list, get, put, remove]) sub(idp, io);
}
