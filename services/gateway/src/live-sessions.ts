import type { Clock, Logger } from "@orch/kit";
import { tokenHash } from "./auth-cache.js";

/**
 * Long-lived connections (the audit SSE stream, terminal WebSockets, and later console sessions)
 * outlive the request that authenticated them, so the token cache alone cannot end them. Each is
 * bound here to the credential that opened it and ended when that credential ends: logout of the
 * token, removal of the operator, the token's expiry, or a re-validation that fails.
 *
 * A connection that shows or acts on particular agents (a terminal, a run's stream) also says which
 * (`bind(..., agents)` or `reaches(agents)` later): it lives only while its operator may still reach
 * every one of them (docs/access.md). The reach is re-checked when the operator's scope changes (a
 * revocation with `scopeChanged`), when one of its agents changes (`agentChanged`), and with every
 * re-validation; one that no longer holds ends the connection with `scope_changed` (the operator's
 * scope changed) or `agent_out_of_scope` (the agent changed, or is gone).
 */

/** What a long-lived connection was opened with. */
export interface Credential {
  operatorId: string;
  /**
   * The bearer token (kept to re-validate it), or "" when the connection was admitted without one
   * (a terminal attached with its ticket alone).
   */
  token: string;
  /**
   * Without `token`: the SHA-256 of the token that obtained the ticket, as the terminal service
   * stored it, so that exactly that token's logout ends the connection. "" or absent when not known
   * either: the connection is then bound to the operator only.
   */
  tokenHash?: string;
  /** Token expiry, Unix ms; Infinity when no token is known. */
  expiresAt: number;
  /**
   * The operator's agent selector the connection was opened under ("" = unscoped), to tell a scope
   * change from an agent change; absent when not known (a terminal attached with its ticket alone).
   */
  scope?: string;
}

/** The credential ended: the connection may not continue under any scope. */
export type CredentialEndReason = "logged_out" | "operator_revoked" | "token_expired" | "token_invalid";
/** The credential holds but the operator may no longer reach an agent the connection concerns. */
export type ScopeEndReason = "scope_changed" | "agent_out_of_scope";
/** Why a connection was ended; also the WebSocket close reason and the SSE error code. */
export type EndReason = CredentialEndReason | ScopeEndReason;

export const isScopeEnd = (r: EndReason): r is ScopeEndReason => r === "scope_changed" || r === "agent_out_of_scope";

export interface LiveConnection {
  /** For logs: "audit_stream", "terminal", … */
  kind: string;
  /** Ends the connection at once; called at most once. */
  end(reason: EndReason): void;
}

/** A revocation as broadcast by the auth service (orch.v1.Revocation). */
export interface Revocation {
  /** Every token of this operator. */
  operatorId?: string;
  /** One token… */
  tokenHash?: string;
  /** …belonging to this operator. */
  tokenOperatorId?: string;
  /** With operatorId: only its scope changed (its tokens stay valid); re-check, do not end. */
  scopeChanged?: boolean;
}

/** The auth service's answer about a credential; `unknown` when it could not be asked (retried). */
export type Verdict = "valid" | "invalid" | "unknown";

/**
 * Whether an operator may still reach every one of some agents, with its scope as now stored ("" =
 * unscoped); `unknown` when it could not be asked (retried).
 */
export type Reach = { verdict: "in" | "out"; scope: string } | { verdict: "unknown" };

export interface LiveSessionsDeps {
  clock: Clock;
  log: Logger;
  /** Asks the auth service whether a credential still authenticates. */
  verify(cred: Credential): Promise<Verdict>;
  /** Asks whether the operator may still reach these agents; default: always (no scope checks). */
  reach?(operatorId: string, agents: readonly string[]): Promise<Reach>;
  /** Injected timers (tests); defaults to unref'ed setTimeout. */
  timer?: { set(fn: () => void, ms: number): unknown; clear(handle: unknown): void };
  /** Delay before asking again when the auth service could not answer. */
  retryMs?: number;
  /**
   * How long a logged-out token is remembered, so that a connection bound to it afterwards (a
   * ticket obtained before the logout, redeemed after it) ends at once. Longer than a ticket lives.
   */
  loggedOutMemoryMs?: number;
}

/**
 * A binding's states: `open` (admitted, no doubt about it) → `checking` (a re-validation is in
 * flight; traffic continues, the credential was valid when last known) → back to `open`, or →
 * `ended` (end() was called; terminal). Release (the connection closed by itself) removes it in
 * any state.
 */
type State = "open" | "checking" | "ended";

/**
 * The reach check of a binding runs beside its credential state: `idle` → `checking` → `idle`, or
 * the binding ends. A request arriving while a check is in flight (`again`) runs one more after it:
 * the answer in flight may predate the change that prompted the request.
 */
interface ReachCheck {
  agents: readonly string[];
  /** The operator's scope when last known to allow the connection. */
  scope: string | undefined;
  checking: boolean;
  again: boolean;
  /** Why a pending re-check was asked for, when it was the operator's scope. */
  hint: ScopeEndReason | undefined;
  retryTimer?: unknown;
}

interface Binding {
  cred: Credential;
  hash: string;
  conn: LiveConnection;
  state: State;
  reach: ReachCheck;
  expiryTimer?: unknown;
  retryTimer?: unknown;
}

/** What bind returns: call it when the connection closes by itself; `reaches` names its agents. */
export type Bound = (() => void) & {
  /** The agents the connection shows or acts on, once known (a stream's first read); checked at once. */
  reaches(agents: readonly string[]): void;
};

/** Bounds the logged-out memory whatever the logout rate (oldest forgotten first). */
const LOGGED_OUT_MAX = 10_000;

/** setTimeout's limit (~24.8 days); a longer expiry is re-armed on the way. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const defaultTimer = {
  set(fn: () => void, ms: number) {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clear: (h: unknown) => clearTimeout(h as NodeJS.Timeout),
};

/** What the registry's bindings share: its deps with their defaults, the bindings, the logouts heard. */
interface Registry {
  deps: LiveSessionsDeps;
  timer: NonNullable<LiveSessionsDeps["timer"]>;
  retryMs: number;
  loggedOutMemoryMs: number;
  reach: NonNullable<LiveSessionsDeps["reach"]>;
  bindings: Set<Binding>;
  /** Token hash → when its logout was heard (insertion order = age). */
  loggedOut: Map<string, number>;
}

function forgetOldLogouts(reg: Registry) {
  const horizon = reg.deps.clock.now() - reg.loggedOutMemoryMs;
  for (const [hash, at] of reg.loggedOut) {
    if (at >= horizon && reg.loggedOut.size <= LOGGED_OUT_MAX) break;
    reg.loggedOut.delete(hash);
  }
}

function end(reg: Registry, b: Binding, reason: EndReason) {
  if (b.state === "ended") return;
  b.state = "ended";
  release(reg, b);
  const fields = { kind: b.conn.kind, operator: b.cred.operatorId, agents: b.reach.agents, reason };
  const why = isScopeEnd(reason) ? "the operator may no longer reach its agents" : "its credential ended";
  reg.deps.log.info(fields, `ending a live connection: ${why}`);
  try {
    b.conn.end(reason);
  } catch (err) {
    reg.deps.log.warn({ err, kind: b.conn.kind }, "ending a live connection failed");
  }
}

function release(reg: Registry, b: Binding) {
  const { timer } = reg;
  b.state = "ended";
  reg.bindings.delete(b);
  if (b.expiryTimer !== undefined) timer.clear(b.expiryTimer);
  if (b.retryTimer !== undefined) timer.clear(b.retryTimer);
  if (b.reach.retryTimer !== undefined) timer.clear(b.reach.retryTimer);
  b.expiryTimer = b.retryTimer = b.reach.retryTimer = undefined;
}

function armExpiry(reg: Registry, b: Binding) {
  if (!Number.isFinite(b.cred.expiresAt)) return;
  const left = b.cred.expiresAt - reg.deps.clock.now();
  if (left <= 0) return end(reg, b, "token_expired");
  b.expiryTimer = reg.timer.set(
    () => {
      b.expiryTimer = undefined;
      armExpiry(reg, b);
    },
    Math.min(left, MAX_TIMER_MS),
  );
}

/** `asked` shares one answer between the bindings of one token within a round. */
async function check(reg: Registry, b: Binding, asked = new Map<string, Promise<Verdict>>()): Promise<void> {
  const { timer } = reg;
  if (b.state !== "open") return;
  b.state = "checking";
  if (b.retryTimer !== undefined) timer.clear(b.retryTimer);
  b.retryTimer = undefined;
  // A token-less binding can only be checked through its operator, unless a binding holding the
  // same token was asked in this round (revalidateAll asks those first): then it shares that answer.
  const byToken = b.cred.token || (b.hash && asked.has(`t:${b.hash}`));
  const key = byToken ? `t:${b.hash}` : `o:${b.cred.operatorId}`;
  let pending = asked.get(key);
  if (!pending) {
    pending = reg.deps.verify(b.cred).catch((): Verdict => "unknown");
    asked.set(key, pending);
  }
  const verdict = await pending;
  if (b.state !== "checking") return; // ended or released meanwhile
  if (verdict === "invalid") return end(reg, b, "token_invalid");
  b.state = "open";
  if (verdict === "unknown") {
    b.retryTimer = timer.set(() => {
      b.retryTimer = undefined;
      void check(reg, b);
    }, reg.retryMs);
  }
}

/**
 * Asks whether the binding's operator may still reach its agents; ends it when not. `hint` says the
 * operator's scope changed (the reason then, whatever the answer's scope); otherwise a scope other
 * than the one last seen makes it `scope_changed`, and an unchanged one `agent_out_of_scope`.
 * `asked` shares one answer between the bindings of one operator and agent set within a round.
 */
async function checkReach(
  reg: Registry,
  b: Binding,
  hint?: ScopeEndReason,
  asked = new Map<string, Promise<Reach>>(),
): Promise<void> {
  const { timer } = reg;
  const r = b.reach;
  if (b.state === "ended" || r.agents.length === 0) return;
  if (r.checking) {
    r.again = true;
    r.hint ??= hint;
    return;
  }
  r.checking = true;
  if (r.retryTimer !== undefined) timer.clear(r.retryTimer);
  r.retryTimer = undefined;
  const key = `${b.cred.operatorId}\n${r.agents.join("\n")}`;
  let pending = asked.get(key);
  if (!pending) {
    pending = reg.reach(b.cred.operatorId, r.agents).catch((): Reach => ({ verdict: "unknown" }));
    asked.set(key, pending);
  }
  const answer = await pending;
  r.checking = false;
  if (!reg.bindings.has(b)) return; // ended or released meanwhile
  if (r.again) {
    const again = hint ?? r.hint;
    r.again = false;
    r.hint = undefined;
    return checkReach(reg, b, again);
  }
  if (answer.verdict === "out") {
    const scopeMoved = r.scope !== undefined && answer.scope !== r.scope;
    return end(reg, b, hint ?? (scopeMoved ? "scope_changed" : "agent_out_of_scope"));
  }
  if (answer.verdict === "in") {
    r.scope = answer.scope;
    return;
  }
  r.retryTimer = timer.set(() => {
    r.retryTimer = undefined;
    void checkReach(reg, b, hint);
  }, reg.retryMs);
}

export function createLiveSessions(deps: LiveSessionsDeps) {
  const reg: Registry = {
    deps,
    timer: deps.timer ?? defaultTimer,
    retryMs: deps.retryMs ?? 1_000,
    loggedOutMemoryMs: deps.loggedOutMemoryMs ?? 10 * 60_000,
    reach: deps.reach ?? (async (): Promise<Reach> => ({ verdict: "in", scope: "" })),
    bindings: new Set<Binding>(),
    loggedOut: new Map<string, number>(),
  };
  const { bindings, loggedOut } = reg;

  const concerns = (b: Binding, nodeId: string) => b.reach.agents.includes(nodeId);

  return {
    /**
     * Binds a connection to its credential and, when given, the agents it concerns (checked at once
     * unless the operator is known to be unscoped); call the returned function when it closes by itself.
     */
    bind(cred: Credential, conn: LiveConnection, agents: readonly string[] = []): Bound {
      const hash = cred.token ? tokenHash(cred.token) : (cred.tokenHash ?? "");
      const reachCheck: ReachCheck = { agents, scope: cred.scope, checking: false, again: false, hint: undefined };
      const b: Binding = { cred, hash, conn, state: "open", reach: reachCheck };
      bindings.add(b);
      forgetOldLogouts(reg);
      if (hash && loggedOut.has(hash)) end(reg, b, "logged_out");
      else armExpiry(reg, b);
      // An agent may have left the scope between the admission and the binding (its change unheard).
      if (cred.scope !== "") void checkReach(reg, b);
      return Object.assign(() => release(reg, b), {
        reaches(more: readonly string[]) {
          if (b.state === "ended") return;
          const known = new Set(b.reach.agents);
          const added = more.filter((a) => !known.has(a));
          if (added.length === 0) return;
          b.reach.agents = [...b.reach.agents, ...added];
          if (cred.scope !== "") void checkReach(reg, b);
        },
      });
    },

    /** True while some connection concerns agents (else agent changes need not even be read). */
    watchesAgents(): boolean {
      for (const b of bindings) if (b.reach.agents.length > 0) return true;
      return false;
    },

    /** An agent's tags changed, or it was rejected or removed: re-checks the connections concerning it. */
    agentChanged(nodeId: string): void {
      for (const b of [...bindings]) if (concerns(b, nodeId)) void checkReach(reg, b);
    },

    /** Applies a revocation broadcast: ends what it covers at once (a scope change: re-checks it). */
    revoke(r: Revocation) {
      if (r.operatorId && r.scopeChanged) {
        for (const b of [...bindings]) if (b.cred.operatorId === r.operatorId) void checkReach(reg, b, "scope_changed");
        return;
      }
      if (r.tokenHash) {
        loggedOut.delete(r.tokenHash);
        loggedOut.set(r.tokenHash, deps.clock.now());
        forgetOldLogouts(reg);
      }
      for (const b of [...bindings]) {
        const op = b.cred.operatorId;
        if (r.operatorId && r.operatorId === op) end(reg, b, "operator_revoked");
        else if (r.tokenHash && b.hash && r.tokenHash === b.hash) end(reg, b, "logged_out");
        // Bound to no known token: any logout of its operator ends it (fail closed).
        else if (r.tokenHash && !b.hash && r.tokenOperatorId && r.tokenOperatorId === op) end(reg, b, "logged_out");
      }
    },

    /**
     * After a gap in the broadcasts (a NATS reconnect), and periodically: asks the auth service about
     * every binding, then whether each one's operator still reaches its agents.
     */
    revalidateAll(): Promise<void> {
      const asked = new Map<string, Promise<Verdict>>();
      const reachAsked = new Map<string, Promise<Reach>>();
      const ordered = [...bindings].sort((a, b) => Number(!a.cred.token) - Number(!b.cred.token));
      return Promise.all(
        ordered.map(async (b) => {
          await check(reg, b, asked);
          await checkReach(reg, b, undefined, reachAsked);
        }),
      ).then(() => undefined);
    },

    /** Bindings by state (tests, metrics). */
    count(state?: Exclude<State, "ended">): number {
      let n = 0;
      for (const b of bindings) if (!state || b.state === state) n++;
      return n;
    },

    stop() {
      for (const b of [...bindings]) release(reg, b);
    },
  };
}
export type LiveSessions = ReturnType<typeof createLiveSessions>;
