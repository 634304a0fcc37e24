// Validation of PutIdentityProvider's input: everything is checked before the issuer is contacted.
import { checkName, type PutIdentityProviderRequest, type SsoMappingRule } from "@orch/contracts";
import { invalid } from "@orch/kit";
import { agentSelector } from "../validate.js";
import type { MappingRule } from "./mapping.js";
import { isLoopbackHttp } from "./oidc-client.js";

export interface ProviderInput {
  name: string;
  displayName: string;
  issuer: string;
  clientId: string;
  scopes: string[];
  groupsClaim: string;
  allowedDomains: string[];
  rules: MappingRule[];
  refreshIntervalSeconds: number;
  enabled: boolean;
}

const SCOPE_RE = /^[\x21\x23-\x5b\x5d-\x7e]{1,100}$/;
const DOMAIN_RE = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const CLAIM_RE = /^[A-Za-z0-9_:./-]{1,100}$/;
const MAX_INTERVAL_S = 86_400;

function checkIssuer(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid("invalid_request", "issuer must be a URL", { field: "issuer" });
  }
  if (url.protocol !== "https:" && !isLoopbackHttp(url)) {
    throw invalid("invalid_request", "issuer must be an https URL (http only on loopback)", { field: "issuer" });
  }
  if (url.search || url.hash || url.username || url.password) {
    throw invalid("invalid_request", "issuer must not carry a query, fragment or credentials", { field: "issuer" });
  }
  return text;
}

function checkDomains(domains: readonly string[], field: string): string[] {
  return domains.map((d) => {
    const domain = d.trim().toLowerCase();
    if (!DOMAIN_RE.test(domain)) throw invalid("invalid_request", `'${d}' is not a domain name`, { field });
    return domain;
  });
}

function checkRule(r: SsoMappingRule, i: number): MappingRule {
  const field = `rules[${i}]`;
  if (r.role !== "admin" && r.role !== "operator") {
    throw invalid("invalid_request", `${field}.role must be admin or operator`, { field: `${field}.role` });
  }
  if (r.name.length > 100) throw invalid("invalid_request", `${field}.name is too long`, { field: `${field}.name` });
  if (r.groups.some((g) => g === "" || g.length > 256)) {
    throw invalid("invalid_request", `${field}.groups holds an empty or overlong group`, { field: `${field}.groups` });
  }
  if (r.email.length > 320) throw invalid("invalid_request", `${field}.email is too long`, { field: `${field}.email` });
  // Admins reach every agent (docs/access.md): a selector on an admin rule would mean nothing.
  const selector = r.role === "admin" ? null : agentSelector(r.agentSelector, r.role);
  return {
    name: r.name.trim(),
    groups: [...r.groups],
    email: r.email.trim(),
    domains: checkDomains(r.domains, `${field}.domains`),
    role: r.role,
    agent_selector: selector ?? "",
  };
}

export function checkProviderInput(req: PutIdentityProviderRequest): ProviderInput {
  const badName = checkName(req.name);
  if (badName) throw invalid(badName.reason, `name ${badName.message}`, { field: "name" });
  const issuer = checkIssuer(req.issuer.trim());
  const clientId = req.clientId.trim();
  if (!clientId || clientId.length > 255) {
    throw invalid("invalid_request", "client_id is required", { field: "client_id" });
  }
  const scopes = req.scopes.length > 0 ? req.scopes.map((s) => s.trim()) : ["openid", "email", "profile"];
  if (scopes.some((s) => !SCOPE_RE.test(s)))
    throw invalid("invalid_request", "a scope is malformed", { field: "scopes" });
  if (!scopes.includes("openid")) scopes.unshift("openid");
  const groupsClaim = req.groupsClaim.trim() || "groups";
  if (!CLAIM_RE.test(groupsClaim))
    throw invalid("invalid_request", "groups_claim is malformed", { field: "groups_claim" });
  const interval = req.refreshIntervalSeconds;
  if (interval < 0 || interval > MAX_INTERVAL_S) {
    throw invalid("invalid_request", `refresh_interval_seconds must be 0 (the default) to ${MAX_INTERVAL_S}`, {
      field: "refresh_interval_seconds",
    });
  }
  const displayName = req.displayName.trim() || req.name;
  if (displayName.length > 100) throw invalid("invalid_request", "display_name is too long", { field: "display_name" });
  return {
    name: req.name,
    displayName,
    issuer,
    clientId,
    scopes: [...new Set(scopes)],
    groupsClaim,
    allowedDomains: checkDomains(req.allowedDomains, "allowed_domains"),
    rules: req.rules.map(checkRule),
    refreshIntervalSeconds: interval,
    enabled: req.enabled,
  };
}
