/**
 * Operator ids as the names a person reads, for human output only.
 *
 * Many API records carry only the id of the operator who created or changed them (`created_by`,
 * `updated_by`, an assignment run's `started_by`). A command whose human output shows such a value
 * asks for the names once — `await operatorNames(ctx)` — and hands the lookup to its pure
 * formatters. With --json nothing is fetched and ids stay ids, so scripts see what the API sent.
 */
import { unwrap } from "@orch/client";
import type { Context } from "./context.js";
import { ProblemError } from "./errors.js";
import { pages } from "./pages.js";

/** The operator's name for an id; anything it does not know (`system`, a deleted operator) unchanged. */
export type OperatorNames = <T extends string | null | undefined>(id: T) => T | string;

/** The lookup that knows no names: what formatters use by default and --json gets. */
export const idsOnly: OperatorNames = (id) => id;

/** The largest page the API serves; operators are few, so one request usually covers them all. */
const PAGE = 500;

const cache = new WeakMap<Context, Promise<OperatorNames>>();

/**
 * One `GET /api/v1/operators` (every page) per command invocation, cached on the context. When the
 * caller may not list operators (403) or the listing fails otherwise, ids are shown unchanged: a
 * name is a convenience, and the command's own answer already arrived.
 */
export function operatorNames(ctx: Context): Promise<OperatorNames> {
  if (ctx.json) return Promise.resolve(idsOnly);
  let names = cache.get(ctx);
  if (!names) {
    names = fetchNames(ctx);
    cache.set(ctx, names);
  }
  return names;
}

async function fetchNames(ctx: Context): Promise<OperatorNames> {
  try {
    const page = await pages(
      async (cursor) => unwrap(await ctx.api.GET("/api/v1/operators", { params: { query: { limit: PAGE, cursor } } })),
      "operators",
      { all: true },
    );
    return namesFrom(page.operators);
  } catch (err) {
    if (err instanceof ProblemError) return idsOnly;
    throw err;
  }
}

/** The lookup over a list of operators (pure; unit-tested). */
export function namesFrom(operators: readonly { id: string; name: string }[]): OperatorNames {
  const byId = new Map(operators.map((o) => [o.id, o.name]));
  return (id) => (id ? (byId.get(id) ?? id) : id);
}
