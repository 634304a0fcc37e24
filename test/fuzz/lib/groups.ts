import type { Route } from "./requests.js";

// The fuzz runs in two files, each with its own stack, so that each stays well inside the per-file
// timeout on a loaded machine. Every route of the document is in exactly one group.
const FLEET =
  /^\/api\/v1\/(agents|agent-upgrades|state|assignments|runs|terminal|drift|modules|discover|tags|sources)(\/|$)/;

/** Agents, state, runs, terminals, sources: the routes that reach real agents. */
export const isFleetRoute = (r: Route) => FLEET.test(r.path);
/** Everything else: sign-in, operators, secrets, audit, notifications, install, status. */
export const isControlRoute = (r: Route) => !isFleetRoute(r);
