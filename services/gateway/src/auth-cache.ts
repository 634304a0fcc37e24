import { createHash } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { type AuthService, RevocationSchema, type Revocation } from "@orch/contracts";
import { unauthenticated, type Client, type Clock, type Logger, type NatsConnection } from "@orch/kit";

export interface Principal {
  id: string;
  name: string;
  role: "admin" | "operator";
  /** Agent selector limiting the agents this operator reaches; "" = unscoped (docs/access.md). */
  scope: string;
  /** Token expiry, ms. */
  expiresAt: number;
}

interface Entry {
  principal: Principal;
  tokenHash: string;
  cachedAt: number;
}

export const REVOCATION_SUBJECT = "orch.auth.revoked";
export const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex");
/** The token of an `Authorization: Bearer <token>` header; undefined without one. */
export const bearerToken = (header: string | undefined) => /^Bearer\s+(\S+)$/i.exec(header ?? "")?.[1];

/**
 * Bearer tokens are resolved through the auth service once, then served from memory: steady-state
 * requests cost no bus round trip. Revocations arrive as a broadcast on `orch.auth.revoked`; after
 * a reconnect (when a broadcast may have been missed) the whole cache is dropped, and a TTL bounds
 * staleness in any case. The one subscription also feeds `onRevocation` (the live-session registry):
 * a revocation, or undefined when one may have been missed (after a reconnect, or an unreadable one).
 */
export function createTokenCache(deps: {
  nc: NatsConnection;
  auth: Client<typeof AuthService>;
  clock: Clock;
  log: Logger;
  ttlMs: number;
  maxSize: number;
  onRevocation?: (r: Revocation | undefined) => void;
}) {
  const entries = new Map<string, Entry>();
  const inflight = new Map<string, Promise<Principal>>();
  let stopped = false;

  const sub = deps.nc.subscribe(REVOCATION_SUBJECT, {
    callback: (_err, msg) => {
      try {
        const r = fromBinary(RevocationSchema, msg.data);
        for (const [token, e] of entries) {
          if ((r.operatorId && e.principal.id === r.operatorId) || (r.tokenHash && e.tokenHash === r.tokenHash))
            entries.delete(token);
        }
        deps.onRevocation?.(r);
      } catch (err) {
        deps.log.warn({ err }, "bad revocation message; dropping token cache");
        entries.clear();
        deps.onRevocation?.(undefined);
      }
    },
  });
  void (async () => {
    for await (const s of deps.nc.status()) {
      if (stopped) break;
      if (s.type === "reconnect" || s.type === "disconnect") entries.clear();
      if (s.type === "reconnect") deps.onRevocation?.(undefined);
    }
  })();

  async function lookup(token: string): Promise<Principal> {
    try {
      const p = await deps.auth.authenticate({ token }, { timeoutMs: 3000 });
      const op = p.operator;
      if (!op) throw unauthenticated("invalid_token", "the token is invalid or expired");
      // With the operator's just-in-time grants (docs/approvals.md); an older auth sends none.
      const role = (op.effectiveRole || op.role) === "admin" ? "admin" : "operator";
      // Admins are unscoped whatever the record says (docs/access.md).
      const scope = role === "admin" ? "" : op.effectiveRole ? op.effectiveAgentSelector : op.agentSelector;
      return { id: op.id, name: op.name, role, scope, expiresAt: p.expiresAt };
    } finally {
      inflight.delete(token);
    }
  }

  /** The cached principal while the token is unexpired and the entry fresh; drops a stale entry. */
  function cached(token: string): Principal | undefined {
    const hit = entries.get(token);
    if (!hit) return undefined;
    const now = deps.clock.now();
    if (hit.principal.expiresAt > now && now - hit.cachedAt < deps.ttlMs) return hit.principal;
    entries.delete(token);
    return undefined;
  }

  return {
    /** Synchronous: what resolve answers without a bus round trip, or undefined (then call resolve). */
    cached,
    async resolve(token: string): Promise<Principal> {
      const hit = cached(token);
      if (hit) return hit;
      let p = inflight.get(token);
      if (!p) {
        p = lookup(token);
        inflight.set(token, p);
      }
      const principal = await p;
      if (entries.size >= deps.maxSize) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      entries.set(token, { principal, tokenHash: tokenHash(token), cachedAt: deps.clock.now() });
      return principal;
    },
    size: () => entries.size,
    stop() {
      stopped = true;
      sub.unsubscribe();
      entries.clear();
    },
  };
}
export type TokenCache = ReturnType<typeof createTokenCache>;
