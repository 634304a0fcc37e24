import { isDeepStrictEqual } from "node:util";
import { precondition, type Queryable } from "@orch/kit";
import { assignmentsDb, modulesDb, type ModuleRow } from "../db/catalog.js";
import { parameterTemplateProblem } from "../module/liquid/context.js";
import { checkParameters, parameterError, type DeclaringModule } from "../module/parameters.js";
import type { ParsedModule } from "../module/types.js";
import type { ModuleCache } from "./modules.js";
import type { ModuleSource } from "./render.js";

/** The declarations of an assignment's modules, in its order, from rows already read (with content). */
export function declaringModules(
  cache: ModuleCache,
  rows: readonly ModuleRow[],
  order: readonly string[],
): DeclaringModule[] {
  const byName = new Map(rows.map((r) => [r.name, r]));
  return order.flatMap((name) => {
    const row = byName.get(name);
    return row ? [{ name, parameters: cache.parse(name, row.sha256, row.content, row.files).parameters }] : [];
  });
}

/** The given parameters as stored; 400 with the first problem (unknown, missing, wrong type, a template that cannot render). */
export function requireParameters(modules: readonly DeclaringModule[], given: unknown): Record<string, unknown> {
  const problems = checkParameters(modules, given, parameterTemplateProblem);
  if (problems.length) throw parameterError(problems[0]!);
  return { ...((given ?? {}) as Record<string, unknown>) };
}

/** Names whose value differs between two parameter maps (added, removed or changed): audit lists names, never values. */
export function changedParameters(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((n) => !isDeepStrictEqual(before[n], after[n])).sort();
}

/** ", parameters port, hosts" for an audit summary; "" when none. */
export const parametersNote = (names: readonly string[], verb = "") =>
  names.length ? `, parameters ${names.join(", ")}${verb}` : "";

/**
 * Refuses a new version of module `name` that would leave an assignment using it with invalid
 * parameters (a new required parameter it does not give, one it gives no longer declared, a type
 * changed): 409 module_breaks_assignments naming them. Failing here, while the operator is at the
 * upload, beats every later apply and enforcement of those assignments failing on every agent.
 */
export async function refuseBrokenAssignments(
  db: Queryable,
  cache: ModuleCache,
  name: string,
  parsed: ParsedModule,
): Promise<void> {
  const declares = Object.keys(parsed.parameters).length > 0;
  const users = (await assignmentsDb.allUsing(db, name)).filter(
    (a) => declares || Object.keys(a.parameters).length > 0,
  );
  if (users.length === 0) return;
  const others = [...new Set(users.flatMap((a) => a.modules))].filter((m) => m !== name);
  const rows = others.length ? await modulesDb.getMany(db, others) : [];
  const broken: Array<{ assignment: string; message: string }> = [];
  for (const a of users) {
    const modules = declaringModules(cache, rows, a.modules).concat({ name, parameters: parsed.parameters });
    const problem = checkParameters(modules, a.parameters)[0];
    if (problem) broken.push({ assignment: a.name, message: problem.message });
  }
  if (broken.length === 0) return;
  const shown = broken.slice(0, 5).map((b) => `${b.assignment}: ${b.message}`);
  throw precondition(
    "module_breaks_assignments",
    `this version of module '${name}' would make the parameters of assignment${broken.length > 1 ? "s" : ""} ${broken
      .map((b) => b.assignment)
      .join(", ")} invalid (${shown.join("; ")}${broken.length > 5 ? "; …" : ""}); change them first`,
    { assignments: broken.map((b) => b.assignment) },
  );
}

/** An assignment's modules as its operations render them: each carries the parameters it gives. */
export const withParameters = (
  sources: readonly ModuleSource[],
  parameters: Readonly<Record<string, unknown>>,
): ModuleSource[] => sources.map((s) => ({ ...s, parameters }));
