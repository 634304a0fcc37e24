import { z } from "zod";
import { NAME_RE, checkName } from "@orch/contracts";
import { ruled } from "../schemas.js";
import { AgentSelector } from "./operators-schemas.js";

/**
 * Request shapes of /api/v1/identity-providers. Types and sizes only: the auth service checks the
 * rest (the issuer is discovered before anything is stored, the selectors are parsed with the
 * shared grammar) and answers with the same codes.
 */

/** A provider named in the path of a read, delete or mapping test: unknown names are the service's 404. */
export const ProviderParams = z.object({ name: z.string().min(1).max(64) });
/** A provider being created or replaced: its name appears in sign-in URLs. */
export const NewProviderParams = z.object({ name: ruled(checkName, NAME_RE) });

const Strings = (what: string, max = 100) => z.array(z.string().trim().min(1).max(256)).max(max).describe(what);

export const MappingRuleIn = z.object({
  name: z.string().max(100).optional().describe("label shown on the operator and in audit events (default `rule <n>`)"),
  groups: Strings("matches when the groups claim holds any of these; empty or absent = no group condition").optional(),
  email: z
    .string()
    .max(320)
    .optional()
    .describe("matches when the email equals this or fits this glob (`*@example.com`); absent = no condition"),
  domains: Strings("matches when the email's domain is one of these; absent = no condition").optional(),
  role: z.enum(["admin", "operator"]),
  agent_selector: AgentSelector.nullable()
    .optional()
    .describe("agent selector scoping an operator mapped by this rule; null or absent = unscoped; never for admins"),
});

export const PutProviderBody = z.object({
  display_name: z
    .string()
    .trim()
    .max(100)
    .optional()
    .describe('sign-in button label ("Sign in with …"); default the name'),
  issuer: z.string().trim().min(1).max(2048).describe("issuer URL; its /.well-known/openid-configuration is read"),
  client_id: z.string().trim().min(1).max(512),
  client_secret: z
    .string()
    .max(4096)
    .optional()
    .describe('write-only, sealed at rest: absent keeps the stored one, "" clears it; never returned'),
  scopes: Strings("scopes requested; default openid, email, profile", 50).optional(),
  groups_claim: z
    .string()
    .trim()
    .max(200)
    .optional()
    .describe("the claim carrying the user's groups; default `groups`"),
  allowed_domains: Strings("only verified emails in these domains may sign in; empty = any").optional(),
  rules: z
    .array(MappingRuleIn)
    .max(200)
    .optional()
    .describe("ordered mapping rules, first match wins; none = nobody may sign in"),
  refresh_interval_seconds: z
    .number()
    .int()
    .min(0)
    .max(86_400)
    .optional()
    .describe(
      "seconds between refreshes of a signed-in operator against the provider; 0 or absent = the default (300)",
    ),
  enabled: z.boolean().optional().describe("enabled for sign-in; default true"),
});

export const TestMappingBody = z.object({
  claims: z.record(z.string(), z.unknown()).describe("the claims to map, as in an ID token's payload"),
});

/** The PutIdentityProvider request for a validated body (absent lists are empty, the service's defaults apply). */
export function putRequest(name: string, b: z.infer<typeof PutProviderBody>) {
  return {
    name,
    displayName: b.display_name ?? "",
    issuer: b.issuer,
    clientId: b.client_id,
    ...(b.client_secret !== undefined ? { clientSecret: b.client_secret } : {}),
    scopes: b.scopes ?? [],
    groupsClaim: b.groups_claim ?? "",
    allowedDomains: b.allowed_domains ?? [],
    rules: (b.rules ?? []).map((r) => ({
      name: r.name ?? "",
      groups: r.groups ?? [],
      email: r.email ?? "",
      domains: r.domains ?? [],
      role: r.role,
      agentSelector: r.agent_selector ?? "",
    })),
    refreshIntervalSeconds: b.refresh_interval_seconds ?? 0,
    enabled: b.enabled ?? true,
  };
}
