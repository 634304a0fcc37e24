/**
 * One refresher check of one SSO identity as a pure transition function: `step(state, event, now)`
 * returns the next state and the effects the driver (refresher-driver.ts) performs, in order, in the
 * transaction that holds the identity's row. Nothing here does I/O; the provider's answer comes back
 * as an event.
 *
 *   start → refreshing → done        (start → done when there is no refresh token)
 *
 * The deprovisioning policy lives here: a refused refresh, claims no rule maps any more, or a
 * provider silent for longer than the grace period end the operator's access; a changed mapping
 * updates its role and scope.
 */
import { ClaimsError, mapClaims, parseClaims, type MappingPolicy, type MappingResult } from "./mapping.js";

export interface Check {
  operatorId: string;
  operatorName: string;
  provider: string;
  subject: string;
  role: "admin" | "operator";
  agentSelector: string | null;
  hasRefreshToken: boolean;
  checkedAt: number;
  unreachableSince: number | null;
  policy: MappingPolicy;
  intervalMs: number;
  graceMs: number;
}

export type RefreshState = { phase: "start" | "refreshing" | "done"; check: Check };

export type RefreshEvent =
  | { type: "start" }
  /** `claims` null: the provider answered but gave neither an ID token nor userinfo (nothing to re-map). */
  | { type: "refreshed"; claims: Record<string, unknown> | null; refreshToken: string | undefined }
  | { type: "refused"; detail: string }
  | { type: "unreachable"; detail: string }
  | { type: "failed"; detail: string };

export type DeprovisionReason = "refresh_refused" | "mapping_refused" | "provider_unreachable";

export type RefreshEffect =
  | { type: "refresh" }
  | { type: "end_sessions"; reason: "no_refresh_token" }
  | { type: "deprovision"; reason: DeprovisionReason; detail: string }
  | { type: "set_access"; role: "admin" | "operator"; agentSelector: string | null; ruleName: string }
  | {
      type: "checked";
      refreshToken: string | undefined;
      mapping: MappingResult | null;
      groups: string[] | null;
      email: string | null | undefined;
    }
  | { type: "unreachable"; since: number }
  | { type: "count"; outcome: string };

export interface Step {
  state: RefreshState;
  effects: RefreshEffect[];
}

export const initialState = (check: Check): RefreshState => ({ phase: "start", check });

const done = (s: RefreshState, effects: RefreshEffect[]): Step => ({ state: { ...s, phase: "done" }, effects });

function onStart(s: RefreshState): Step {
  if (s.check.hasRefreshToken) return { state: { ...s, phase: "refreshing" }, effects: [{ type: "refresh" }] };
  // Nothing to ask the provider with: the session lives one interval, then the user signs in again.
  return done(s, [
    { type: "end_sessions", reason: "no_refresh_token" },
    { type: "count", outcome: "no_refresh_token" },
  ]);
}

function deprovisioned(s: RefreshState, reason: DeprovisionReason, detail: string): Step {
  return done(s, [
    { type: "deprovision", reason, detail },
    { type: "count", outcome: reason },
  ]);
}

function onRefreshed(s: RefreshState, e: Extract<RefreshEvent, { type: "refreshed" }>): Step {
  const c = s.check;
  if (e.claims === null) {
    const checked: RefreshEffect = {
      type: "checked",
      refreshToken: e.refreshToken,
      mapping: null,
      groups: null,
      email: undefined,
    };
    return done(s, [checked, { type: "count", outcome: "ok" }]);
  }
  let claims: ReturnType<typeof parseClaims>;
  try {
    claims = parseClaims(e.claims, c.policy.groupsClaim);
  } catch (err) {
    if (err instanceof ClaimsError) return deprovisioned(s, "mapping_refused", err.message);
    throw err;
  }
  if (claims.sub !== c.subject) return deprovisioned(s, "mapping_refused", "the provider answered for another subject");
  const mapping = mapClaims(claims, c.policy);
  if (!mapping.matched) return deprovisioned(s, "mapping_refused", mapping.reason);
  const role = mapping.role as "admin" | "operator";
  const agentSelector = mapping.agentSelector || null;
  const effects: RefreshEffect[] = [];
  const changed = role !== c.role || agentSelector !== c.agentSelector;
  if (changed) effects.push({ type: "set_access", role, agentSelector, ruleName: mapping.ruleName });
  effects.push({
    type: "checked",
    refreshToken: e.refreshToken,
    mapping,
    groups: claims.groups,
    email: claims.email ?? null,
  });
  effects.push({ type: "count", outcome: changed ? "changed" : "ok" });
  return done(s, effects);
}

function onSilence(s: RefreshState, now: number, outcome: string, detail: string): Step {
  const since = s.check.unreachableSince ?? now;
  if (now - since >= s.check.graceMs) return deprovisioned(s, "provider_unreachable", detail);
  return done(s, [
    { type: "unreachable", since },
    { type: "count", outcome },
  ]);
}

export function step(s: RefreshState, e: RefreshEvent, now: number): Step {
  if (s.phase === "done") return { state: s, effects: [] };
  if (e.type === "start") return s.phase === "start" ? onStart(s) : { state: s, effects: [] };
  if (s.phase !== "refreshing") return { state: s, effects: [] };
  switch (e.type) {
    case "refreshed":
      return onRefreshed(s, e);
    case "refused":
      return deprovisioned(s, "refresh_refused", e.detail);
    case "unreachable":
      return onSilence(s, now, "unreachable", e.detail);
    case "failed":
      // An answer that does not validate confirms nothing: it is treated like silence.
      return onSilence(s, now, "error", e.detail);
  }
}
