import { z } from "zod";
import type { IdentityProvider, SsoMappingResult, SsoMappingRule } from "@orch/contracts";
import { iso } from "../schemas.js";

export const MappingRuleOut = z.object({
  name: z.string(),
  groups: z.array(z.string()),
  email: z.string().nullable(),
  domains: z.array(z.string()),
  role: z.enum(["admin", "operator"]),
  agent_selector: z.string().nullable().describe("null = unscoped"),
});

/** An identity provider as the API shows it: never its client secret, only whether one is stored. */
export const IdentityProviderOut = z.object({
  id: z.string(),
  name: z.string(),
  display_name: z.string(),
  issuer: z.string(),
  client_id: z.string(),
  has_client_secret: z.boolean(),
  scopes: z.array(z.string()),
  groups_claim: z.string(),
  allowed_domains: z.array(z.string()),
  rules: z.array(MappingRuleOut),
  refresh_interval_seconds: z.number().int(),
  enabled: z.boolean(),
  device_flow: z.boolean().describe("the provider offers the device authorization grant (from its discovery document)"),
  created_at: z.string(),
  updated_at: z.string(),
});
export const IdentityProviderList = z.object({ providers: z.array(IdentityProviderOut) });

export const MappingResultOut = z.object({
  matched: z.boolean(),
  rule_index: z.number().int().nullable().describe("index of the matching rule, from 0; null when none matched"),
  rule_name: z.string().nullable(),
  role: z.enum(["admin", "operator"]).nullable(),
  agent_selector: z.string().nullable().describe("null = unscoped (or nothing matched)"),
  reason: z.string().nullable().describe("why nothing matched, or why the email domain was refused"),
  operator_name: z.string().nullable().describe("the operator name these claims would provision"),
});

export const DeprovisionedOut = z.object({
  deprovisioned: z.number().int().describe("operators deactivated because they signed in through this provider"),
});

const orNull = (s: string) => s || null;

export function mappingRuleJson(r: SsoMappingRule): z.infer<typeof MappingRuleOut> {
  return {
    name: r.name,
    groups: [...r.groups],
    email: orNull(r.email),
    domains: [...r.domains],
    role: r.role === "admin" ? "admin" : "operator",
    agent_selector: orNull(r.agentSelector),
  };
}

export function identityProviderJson(p: IdentityProvider): z.infer<typeof IdentityProviderOut> {
  return {
    id: p.id,
    name: p.name,
    display_name: p.displayName || p.name,
    issuer: p.issuer,
    client_id: p.clientId,
    has_client_secret: p.hasClientSecret,
    scopes: [...p.scopes],
    groups_claim: p.groupsClaim,
    allowed_domains: [...p.allowedDomains],
    rules: p.rules.map(mappingRuleJson),
    refresh_interval_seconds: p.refreshIntervalSeconds,
    enabled: p.enabled,
    device_flow: p.deviceFlow,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
  };
}

export function mappingResultJson(r: SsoMappingResult): z.infer<typeof MappingResultOut> {
  return {
    matched: r.matched,
    rule_index: r.matched && r.ruleIndex >= 0 ? r.ruleIndex : null,
    rule_name: r.matched ? orNull(r.ruleName) : null,
    role: r.matched ? (r.role === "admin" ? "admin" : "operator") : null,
    agent_selector: r.matched ? orNull(r.agentSelector) : null,
    reason: orNull(r.reason),
    operator_name: orNull(r.operatorName),
  };
}
