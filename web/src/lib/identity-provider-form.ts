/**
 * An identity provider's form fields ↔ the body of `PUT /api/v1/identity-providers/{name}`. The
 * client secret is write-only: the form never holds the stored one; blank on an edit leaves the key
 * out (the API keeps it), "clear the stored secret" sends "" (a public client). Lists are typed
 * comma or space separated. Mapping rules are ordered, first match wins. Pure, unit-tested.
 */

export type RuleRole = "admin" | "operator";

export interface RuleFields {
  name: string;
  /** Comma separated. */
  groups: string;
  email: string;
  /** Comma separated. */
  domains: string;
  role: RuleRole;
  agentSelector: string;
}

export interface ProviderFields {
  name: string;
  displayName: string;
  issuer: string;
  clientId: string;
  /** Typed only; blank keeps the stored one on an edit. */
  clientSecret: string;
  /** Send "" to forget the stored secret. */
  clearSecret: boolean;
  scopes: string;
  groupsClaim: string;
  allowedDomains: string;
  refreshIntervalSeconds: string;
  enabled: boolean;
  rules: RuleFields[];
}

/** What the form reads of a stored provider (the API's answer; it has no secret, only whether one is stored). */
export interface StoredProvider {
  name: string;
  display_name: string;
  issuer: string;
  client_id: string;
  scopes: string[];
  groups_claim: string;
  allowed_domains: string[];
  refresh_interval_seconds: number;
  enabled: boolean;
  rules: Array<{
    name?: string;
    groups?: string[];
    email?: string | null;
    domains?: string[];
    role: RuleRole;
    agent_selector?: string | null;
  }>;
}

export interface ProviderBody {
  display_name?: string;
  issuer: string;
  client_id: string;
  client_secret?: string;
  scopes?: string[];
  groups_claim?: string;
  allowed_domains: string[];
  rules: Array<{
    name?: string;
    groups?: string[];
    email?: string;
    domains?: string[];
    role: RuleRole;
    agent_selector?: string | null;
  }>;
  refresh_interval_seconds?: number;
  enabled: boolean;
}

export type BuiltProvider = { ok: true; body: ProviderBody } | { ok: false; field: string; message: string };

export const emptyRule = (): RuleFields => ({
  name: "",
  groups: "",
  email: "",
  domains: "",
  role: "operator",
  agentSelector: "",
});

export const emptyProviderFields = (): ProviderFields => ({
  name: "",
  displayName: "",
  issuer: "",
  clientId: "",
  clientSecret: "",
  clearSecret: false,
  scopes: "openid, email, profile",
  groupsClaim: "groups",
  allowedDomains: "",
  refreshIntervalSeconds: "",
  enabled: true,
  rules: [emptyRule()],
});

/** "a, b c,,d" → ["a", "b", "c", "d"]. */
export function splitList(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

const joinList = (items: readonly string[] | undefined): string => (items ?? []).join(", ");

/** The form for a stored provider: its settings filled in, the secret field blank. */
export function fieldsFromProvider(p: StoredProvider): ProviderFields {
  return {
    name: p.name,
    displayName: p.display_name,
    issuer: p.issuer,
    clientId: p.client_id,
    clientSecret: "",
    clearSecret: false,
    scopes: joinList(p.scopes),
    groupsClaim: p.groups_claim,
    allowedDomains: joinList(p.allowed_domains),
    refreshIntervalSeconds: p.refresh_interval_seconds ? String(p.refresh_interval_seconds) : "",
    enabled: p.enabled,
    rules: p.rules.map((r) => ({
      name: r.name ?? "",
      groups: joinList(r.groups),
      email: r.email ?? "",
      domains: joinList(r.domains),
      role: r.role,
      agentSelector: r.agent_selector ?? "",
    })),
  };
}

/** The rules with the one at `index` moved by `delta` (-1 up, +1 down); unchanged at either end. */
export function moveRule<T>(rules: readonly T[], index: number, delta: number): T[] {
  const to = index + delta;
  const out = [...rules];
  if (index < 0 || index >= rules.length || to < 0 || to >= rules.length) return out;
  const [moved] = out.splice(index, 1);
  out.splice(to, 0, moved as T);
  return out;
}

export function removeRule<T>(rules: readonly T[], index: number): T[] {
  return rules.filter((_, i) => i !== index);
}

export function replaceRule<T>(rules: readonly T[], index: number, patch: Partial<T>): T[] {
  return rules.map((r, i) => (i === index ? { ...r, ...patch } : r));
}

function buildRule(r: RuleFields): ProviderBody["rules"][number] {
  const groups = splitList(r.groups);
  const domains = splitList(r.domains);
  return {
    ...(r.name.trim() ? { name: r.name.trim() } : {}),
    ...(groups.length ? { groups } : {}),
    ...(r.email.trim() ? { email: r.email.trim() } : {}),
    ...(domains.length ? { domains } : {}),
    role: r.role,
    // An admin is never scoped; a blank selector is "all agents".
    ...(r.role === "operator" && r.agentSelector.trim() ? { agent_selector: r.agentSelector.trim() } : {}),
  };
}

/**
 * The body to PUT. `editing`: a blank secret is left out (kept); "clear" sends "". The API validates
 * everything again (and discovers the issuer) and names the field it refuses.
 */
export function buildProviderBody(f: ProviderFields, editing: boolean): BuiltProvider {
  if (!editing && f.name.trim() === "") return { ok: false, field: "name", message: "Name is required" };
  if (f.issuer.trim() === "") return { ok: false, field: "issuer", message: "Issuer is required" };
  if (f.clientId.trim() === "") return { ok: false, field: "client_id", message: "Client id is required" };
  let refresh: number | undefined;
  if (f.refreshIntervalSeconds.trim() !== "") {
    refresh = Number(f.refreshIntervalSeconds.trim());
    if (!Number.isInteger(refresh) || refresh < 0)
      return { ok: false, field: "refresh_interval_seconds", message: "A whole number of seconds (0 = the default)" };
  }
  const scopes = splitList(f.scopes);
  const body: ProviderBody = {
    ...(f.displayName.trim() ? { display_name: f.displayName.trim() } : {}),
    issuer: f.issuer.trim(),
    client_id: f.clientId.trim(),
    ...(scopes.length ? { scopes } : {}),
    ...(f.groupsClaim.trim() ? { groups_claim: f.groupsClaim.trim() } : {}),
    allowed_domains: splitList(f.allowedDomains),
    rules: f.rules.map(buildRule),
    ...(refresh !== undefined ? { refresh_interval_seconds: refresh } : {}),
    enabled: f.enabled,
  };
  if (f.clearSecret && editing) body.client_secret = "";
  else if (f.clientSecret !== "") body.client_secret = f.clientSecret;
  return { ok: true, body };
}
