import { AuthService } from "@orch/contracts";
import { OrchError, rpcClient, type Clock, type Logger, type NatsConnection } from "@orch/kit";
import { tokenHash } from "./auth-cache.js";

/**
 * Long-lived connections (the audit SSE stream, terminal WebSockets, and later console sessions)
 * outlive the request that authenticated them, so the token cache alone cannot end them. Each is
 * bound here to the credential that opened it and ended when that credential ends: logout of the
 * token, removal of the operator, the token's expiry, or a re-validation that fails.
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
}

/** Why a connection was ended; also the WebSocket close reason and the SSE error code. */
export type EndReason = "logged_out" | "operator_revoked" | "token_expired" | "token_invalid";

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
}

/** The auth service's answer about a credential; `unknown` when it could not be asked (retried). */
export type Verdict = "valid" | "invalid" | "unknown";

export interface LiveSessionsDeps {
  clock: Clock;
  log: Logger;
  /** Asks the auth service whether a credential still authenticates. */
  verify(cred: Credential): Promise<Verdict>;
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

interface Binding {
  cred: Credential;
  hash: string;
  conn: LiveConnection;
  state: State;
  expiryTimer?: unknown;
  retryTimer?: unknown;
}

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

export function createLiveSessions(deps: LiveSessionsDeps) {
  const timer = deps.timer ?? defaultTimer;
  const retryMs = deps.retryMs ?? 1_000;
  const loggedOutMemoryMs = deps.loggedOutMemoryMs ?? 10 * 60_000;
  const bindings = new Set<Binding>();
  /** Token hash → when its logout was heard (insertion order = age). */
  const loggedOut = new Map<string, number>();

  const forgetOldLogouts = () => {
    const horizon = deps.clock.now() - loggedOutMemoryMs;
    for (const [hash, at] of loggedOut) {
      if (at >= horizon && loggedOut.size <= LOGGED_OUT_MAX) break;
      loggedOut.delete(hash);
    }
  };

  const end = (b: Binding, reason: EndReason) => {
    if (b.state === "ended") return;
    b.state = "ended";
    release(b);
    const fields = { kind: b.conn.kind, operator: b.cred.operatorId, reason };
    deps.log.info(fields, "ending a live connection: its credential ended");
    try {
      b.conn.end(reason);
    } catch (err) {
      deps.log.warn({ err, kind: b.conn.kind }, "ending a live connection failed");
    }
  };

  function release(b: Binding) {
    b.state = "ended";
    bindings.delete(b);
    if (b.expiryTimer !== undefined) timer.clear(b.expiryTimer);
    if (b.retryTimer !== undefined) timer.clear(b.retryTimer);
    b.expiryTimer = b.retryTimer = undefined;
  }

  const armExpiry = (b: Binding) => {
    if (!Number.isFinite(b.cred.expiresAt)) return;
    const left = b.cred.expiresAt - deps.clock.now();
    if (left <= 0) return end(b, "token_expired");
    b.expiryTimer = timer.set(
      () => {
        b.expiryTimer = undefined;
        armExpiry(b);
      },
      Math.min(left, MAX_TIMER_MS),
    );
  };

  /** `asked` shares one answer between the bindings of one token within a round. */
  const check = async (b: Binding, asked = new Map<string, Promise<Verdict>>()): Promise<void> => {
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
      pending = deps.verify(b.cred).catch((): Verdict => "unknown");
      asked.set(key, pending);
    }
    const verdict = await pending;
    if (b.state !== "checking") return; // ended or released meanwhile
    if (verdict === "invalid") return end(b, "token_invalid");
    b.state = "open";
    if (verdict === "unknown") {
      b.retryTimer = timer.set(() => {
        b.retryTimer = undefined;
        void check(b);
      }, retryMs);
    }
  };

  return {
    /** Binds a connection to its credential; call the returned function when it closes by itself. */
    bind(cred: Credential, conn: LiveConnection): () => void {
      const hash = cred.token ? tokenHash(cred.token) : (cred.tokenHash ?? "");
      const b: Binding = { cred, hash, conn, state: "open" };
      bindings.add(b);
      forgetOldLogouts();
      if (hash && loggedOut.has(hash)) end(b, "logged_out");
      else armExpiry(b);
      return () => release(b);
    },

    /** Applies a revocation broadcast: ends what it covers at once. */
    revoke(r: Revocation) {
      if (r.tokenHash) {
        loggedOut.delete(r.tokenHash);
        loggedOut.set(r.tokenHash, deps.clock.now());
        forgetOldLogouts();
      }
      for (const b of [...bindings]) {
        const op = b.cred.operatorId;
        if (r.operatorId && r.operatorId === op) end(b, "operator_revoked");
        else if (r.tokenHash && b.hash && r.tokenHash === b.hash) end(b, "logged_out");
        // Bound to no known token: any logout of its operator ends it (fail closed).
        else if (r.tokenHash && !b.hash && r.tokenOperatorId && r.tokenOperatorId === op) end(b, "logged_out");
      }
    },

    /** After a gap in the broadcast (a NATS reconnect): asks the auth service about every binding. */
    revalidateAll(): Promise<void> {
      const asked = new Map<string, Promise<Verdict>>();
      const ordered = [...bindings].sort((a, b) => Number(!a.cred.token) - Number(!b.cred.token));
      return Promise.all(ordered.map((b) => check(b, asked))).then(() => undefined);
    },

    /** Bindings by state (tests, metrics). */
    count(state?: Exclude<State, "ended">): number {
      let n = 0;
      for (const b of bindings) if (!state || b.state === state) n++;
      return n;
    },

    stop() {
      for (const b of [...bindings]) release(b);
    },
  };
}
export type LiveSessions = ReturnType<typeof createLiveSessions>;

/**
 * The gateway's registry. The auth service's revocation broadcast reaches every replica and comes in
 * through the token cache's subscription (`onRevocation`); core NATS delivers at most once, so after
 * a reconnect (`onRevocation(undefined)`) every binding is re-validated, and every `revalidateMs`
 * too, bounding how long a lost broadcast can go unnoticed (the token cache's TTL for HTTP calls).
 */
export function startLiveSessions(deps: {
  nc: NatsConnection;
  clock: Clock;
  log: Logger;
  timeoutMs: number;
  revalidateMs: number;
}) {
  const auth = rpcClient(deps.nc, "auth", AuthService, { timeoutMs: deps.timeoutMs });
  const verify = async (cred: Credential): Promise<Verdict> => {
    try {
      if (cred.token) {
        const p = await auth.authenticate({ token: cred.token });
        return p.operator?.id === cred.operatorId ? "valid" : "invalid";
      }
      await auth.getOperator({ id: cred.operatorId });
      return "valid";
    } catch (err) {
      const code = err instanceof OrchError ? err.code : "";
      if (code === "UNAUTHENTICATED" || code === "NOT_FOUND") return "invalid";
      deps.log.warn({ err: (err as Error).message }, "could not re-validate a live connection; retrying");
      return "unknown";
    }
  };
  const live = createLiveSessions({ clock: deps.clock, log: deps.log, verify });
  const periodic = setInterval(() => void live.revalidateAll(), deps.revalidateMs);
  periodic.unref();

  return {
    ...live,
    /** For the token cache's revocation subscription: a revocation, or undefined when one may have been missed. */
    onRevocation(r: Revocation | undefined): void {
      if (r) live.revoke(r);
      else void live.revalidateAll();
    },
    stop() {
      clearInterval(periodic);
      live.stop();
    },
  };
}
export type GatewayLiveSessions = ReturnType<typeof startLiveSessions>;
