import { isIP } from "node:net";
import { z } from "zod";
import {
  checkBranch,
  checkInterval,
  checkRef,
  checkSourcePath,
  checkWebhookSecret,
  SOURCE_PLAN_WAIT_DEFAULT_S,
  SOURCE_PLAN_WAIT_MAX_S,
  SOURCE_SSH_KEY_MAX,
  SOURCE_TOKEN_MAX,
  sourceUrlKind,
  type Violation,
} from "@orch/contracts";
import { fieldError } from "./agents-schemas.js";
import { NAME } from "./modules-schemas.js";

/**
 * Request shapes of /api/v1/sources. The schemas check types and sizes; the shared source rules
 * (@orch/contracts/rules/sources) run in `checkCreate`/`checkPlan` so a bad value is refused with
 * the same code and `field` the state service answers (invalid_source, invalid_ref), before any
 * bus request. Rule messages never repeat the value: a URL or a secret may carry a credential.
 */

export const SourceParams = z.object({ name: z.string().min(1).max(128) });

export const CreateSourceBody = z.object({
  name: NAME,
  // Lengths of url, branch, path and webhook_secret are the rules' business (same code as the service).
  url: z
    .string()
    .describe("https://, http:// (loopback only with a token), ssh://, user@host:path, or file:// where allowed"),
  branch: z.string().optional().describe("default main"),
  path: z.string().optional().describe('directory holding modules/ and assignments/ (default "" = root)'),
  interval_s: z.number().int().optional().describe("seconds between scheduled syncs (default: the server's)"),
  auth: z
    .object({
      token: z.string().min(1).max(SOURCE_TOKEN_MAX).optional().describe("https token, sent as basic-auth password"),
      username: z.string().min(1).max(256).optional().describe("basic-auth user for the token (x-access-token)"),
      ssh_key: z.string().min(1).max(SOURCE_SSH_KEY_MAX).optional().describe("OpenSSH private deploy key"),
    })
    .strict()
    .optional()
    .describe("stored sealed; never returned"),
  webhook_secret: z.string().optional().describe("verifies push webhooks; generated when absent; returned once"),
});
export type CreateSource = z.infer<typeof CreateSourceBody>;

export const PlanBody = z
  .object({
    ref: z.string().max(200).optional().describe("branch name or commit SHA (default: the source's branch)"),
    wait_seconds: z
      .number()
      .int()
      .min(0)
      .max(SOURCE_PLAN_WAIT_MAX_S)
      .optional()
      .describe(`wait for the plan runs (default ${SOURCE_PLAN_WAIT_DEFAULT_S})`),
  })
  .optional();
export type Plan = z.infer<typeof PlanBody>;

const refuse = (v: Violation | null, field: string) => {
  if (v) throw fieldError("body", field, v.message, v.reason);
};

const LOOPBACK_NAMES = new Set(["localhost", "[::1]"]);
/** A token may travel over plain http only to this host itself. */
function loopback(host: string): boolean {
  if (LOOPBACK_NAMES.has(host)) return true;
  return isIP(host) === 4 && host.startsWith("127.");
}

/** The shared rules for a new source; throws the state service's 400 for the first broken one. */
export function checkCreate(b: CreateSource): void {
  const kind = sourceUrlKind(b.url);
  if (typeof kind === "object") refuse(kind, "url");
  if (b.branch !== undefined) refuse(checkBranch(b.branch), "branch");
  if (b.path !== undefined) refuse(checkSourcePath(b.path), "path");
  if (b.interval_s !== undefined) refuse(checkInterval(b.interval_s), "interval_s");
  if (b.webhook_secret !== undefined) refuse(checkWebhookSecret(b.webhook_secret), "webhook_secret");
  const a = b.auth;
  if (!a || typeof kind === "object") return;
  const bad = (message: string) => refuse({ reason: "invalid_source", message }, "auth");
  if (a.token !== undefined && a.ssh_key !== undefined) bad("must give either a token or an ssh_key, not both");
  if (a.username !== undefined && a.token === undefined) bad("must not give a username without a token");
  if (a.token !== undefined) {
    if (kind !== "https" && kind !== "http") bad("must not give a token for a non-http(s) URL");
    if (kind === "http" && !loopback(new URL(b.url).hostname))
      bad("must not send a token over plain http except to a loopback host");
  }
  if (a.ssh_key !== undefined && kind !== "ssh") bad("must not give an ssh_key for a non-ssh URL");
}

export function checkPlan(b: Plan): void {
  if (b?.ref !== undefined) refuse(checkRef(b.ref), "ref");
}
