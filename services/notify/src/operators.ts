import { AuthService } from "@orch/contracts";
import { rpcClient, type Clock, type NatsConnection } from "@orch/kit";

export interface ActiveOperators {
  /** Ids of active operators, from the auth service (cached for `ttlMs`). */
  ids(): Promise<string[]>;
  /** Forget the cache (an operator was added or removed). */
  invalidate(): void;
}

/** Operators live in the auth service; notify asks over the bus and never reads the auth schema. */
export function activeOperators(deps: {
  nc: NatsConnection;
  clock: Clock;
  timeoutMs: number;
  ttlMs: number;
}): ActiveOperators {
  const auth = rpcClient(deps.nc, "auth", AuthService, { timeoutMs: deps.timeoutMs });
  let cached: { at: number; ids: string[] } | undefined;
  return {
    async ids() {
      const now = deps.clock.now();
      if (cached && now - cached.at < deps.ttlMs) return cached.ids;
      const ids: string[] = [];
      let cursor = "";
      do {
        const page = await auth.listOperators({ limit: 500, cursor });
        for (const o of page.operators) if (o.active) ids.push(o.id);
        cursor = page.nextCursor;
      } while (cursor);
      cached = { at: now, ids };
      return ids;
    },
    invalidate() {
      cached = undefined;
    },
  };
}
