// Claims → role and scope, without I/O: the sign-in, the refresher and TestSsoMapping share it, so
// what an admin tests is what a sign-in does.
import { NAME_RE } from "@orch/contracts";

/** One stored rule (SsoMappingRule as JSON in identity_providers.rules). */
export interface MappingRule {
  name: string;
  groups: string[];
  email: string;
  domains: string[];
  role: "admin" | "operator";
  agent_selector: string;
}

export interface MappingPolicy {
  groupsClaim: string;
  allowedDomains: readonly string[];
  rules: readonly MappingRule[];
}

/** The claims single sign-on relies on, with their types checked. */
export interface SsoClaims {
  sub: string;
  email?: string;
  emailVerified?: boolean;
  preferredUsername?: string;
  groups: string[];
  /** The provider's session id (back-channel logout may name it instead of `sub`). */
  sid?: string;
}

export interface MappingResult {
  matched: boolean;
  ruleIndex: number;
  ruleName: string;
  role: "admin" | "operator" | "";
  /** Empty = unscoped. */
  agentSelector: string;
  reason: string;
}

/** Claims of an unexpected shape: the sign-in is refused with `sso_claims_invalid`. */
export class ClaimsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ClaimsError";
  }
}

/** A claim by name, or by a dotted path into nested objects (`realm_access.roles`). */
function claimAt(raw: Record<string, unknown>, name: string): unknown {
  if (name in raw || !name.includes(".")) return raw[name];
  let cur: unknown = raw;
  for (const part of name.split(".")) {
    if (!cur || typeof cur !== "object" || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function optionalString(raw: Record<string, unknown>, name: string): string | undefined {
  const v = raw[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw new ClaimsError(`claim '${name}' must be a string`);
  return v;
}

export function parseClaims(raw: Record<string, unknown>, groupsClaim: string): SsoClaims {
  const sub = raw.sub;
  if (typeof sub !== "string" || sub === "") throw new ClaimsError("claim 'sub' must be a non-empty string");
  const verified = raw.email_verified;
  // Some providers send "true"/"false" strings; anything else is not a verification statement.
  if (verified !== undefined && typeof verified !== "boolean" && verified !== "true" && verified !== "false") {
    throw new ClaimsError("claim 'email_verified' must be a boolean");
  }
  const groups = claimAt(raw, groupsClaim);
  if (groups !== undefined && groups !== null) {
    if (!Array.isArray(groups) || !groups.every((g) => typeof g === "string")) {
      throw new ClaimsError(`claim '${groupsClaim}' must be a list of strings`);
    }
  }
  const out: SsoClaims = { sub, groups: (groups as string[] | undefined | null) ?? [] };
  const email = optionalString(raw, "email");
  if (email !== undefined) out.email = email;
  if (verified !== undefined) out.emailVerified = verified === true || verified === "true";
  const preferred = optionalString(raw, "preferred_username");
  if (preferred !== undefined) out.preferredUsername = preferred;
  const sid = optionalString(raw, "sid");
  if (sid !== undefined) out.sid = sid;
  return out;
}

function emailDomain(email: string | undefined): string | undefined {
  const at = email?.lastIndexOf("@") ?? -1;
  return email && at > 0 ? email.slice(at + 1).toLowerCase() : undefined;
}

function globMatches(pattern: string, value: string): boolean {
  const re = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${re}$`, "i").test(value);
}

function ruleMatches(rule: MappingRule, c: SsoClaims): boolean {
  if (rule.groups.length > 0 && !rule.groups.some((g) => c.groups.includes(g))) return false;
  if (rule.email !== "" && !(c.email !== undefined && globMatches(rule.email, c.email))) return false;
  if (rule.domains.length > 0) {
    const domain = emailDomain(c.email);
    if (!domain || !rule.domains.some((d) => d.toLowerCase() === domain)) return false;
  }
  return true;
}

const refused = (reason: string): MappingResult => ({
  matched: false,
  ruleIndex: -1,
  ruleName: "",
  role: "",
  agentSelector: "",
  reason,
});

export const ruleLabel = (rule: MappingRule, index: number) => rule.name || `rule ${index + 1}`;

export function mapClaims(c: SsoClaims, policy: MappingPolicy): MappingResult {
  if (policy.allowedDomains.length > 0) {
    const domain = emailDomain(c.email);
    if (!domain) return refused("an email is required: the provider allows only some email domains");
    if (c.emailVerified === false) return refused(`the email ${c.email} is not verified at the provider`);
    if (!policy.allowedDomains.some((d) => d.toLowerCase() === domain)) {
      return refused(`the email domain ${domain} is not allowed`);
    }
  }
  const index = policy.rules.findIndex((r) => ruleMatches(r, c));
  const rule = policy.rules[index];
  if (!rule) {
    return refused(
      policy.rules.length === 0 ? "the provider has no mapping rules" : "no mapping rule matches the user's claims",
    );
  }
  return {
    matched: true,
    ruleIndex: index,
    ruleName: ruleLabel(rule, index),
    role: rule.role,
    agentSelector: rule.role === "admin" ? "" : rule.agent_selector,
    reason: "",
  };
}

const MAX_BASE = 56;

function sanitise(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, MAX_BASE)
    .replace(/[^a-z0-9]+$/, "");
}

/** The operator name the claims ask for: preferred_username, else the email's local part, else `sso-<sub>`. */
export function operatorNameBase(c: SsoClaims): string {
  const local = c.email?.includes("@") ? c.email.slice(0, c.email.lastIndexOf("@")) : undefined;
  for (const candidate of [c.preferredUsername, local]) {
    const name = candidate ? sanitise(candidate) : "";
    if (name && NAME_RE.test(name)) return name;
  }
  const fromSub = sanitise(`sso-${c.sub}`);
  return NAME_RE.test(fromSub) ? fromSub : "sso-user";
}

/** Names tried in order when the base is taken by another operator: `base`, `base-2`, `base-3`... */
export function nameCandidates(base: string, count = 50): string[] {
  return [base, ...Array.from({ length: count - 1 }, (_, i) => `${base}-${i + 2}`)];
}
