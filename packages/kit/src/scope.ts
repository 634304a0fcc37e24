import { matchSelector, parseSelector, splitScope, type Selector, type SelectorTarget } from "@orch/contracts";
import type { Actor } from "./rpc.js";

/**
 * Scoped operator access (docs/access.md): an operator may carry an agent selector that limits
 * the agents it can see and act on. The scope travels with the actor on every RPC and each
 * service that touches agents checks it here, so the rule is the same everywhere.
 */

// Every request of a scoped operator carries the same few selector texts; parse each once.
const MAX_CACHED = 256;
const cache = new Map<string, Selector[] | null>();

/** The scope's alternatives (its own selector and any granted ones: contracts scope-union.ts), parsed. */
function compiled(source: string): Selector[] | null {
  let sels = cache.get(source);
  if (sels !== undefined) return sels;
  try {
    sels = splitScope(source).map((s) => parseSelector(s));
  } catch {
    // The auth service only stores valid selectors; anything else here is refused, not widened.
    sels = null;
  }
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(source, sels);
  return sels;
}

/** True when the actor's reach is limited by an agent selector. */
export const isScoped = (actor: Actor): boolean => Boolean(actor.scope);

/** Whether the actor may see and act on this agent. Unscoped actors (system, admins) reach all. */
export function inScope(actor: Actor, agent: SelectorTarget): boolean {
  if (!actor.scope) return true;
  const sels = compiled(actor.scope);
  return sels?.some((sel) => matchSelector(sel, agent)) ?? false;
}
