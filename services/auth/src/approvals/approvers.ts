// Who may approve: `operator:<name>`, `role:admin`, `role:operator` (every operator, admins
// included) and `group:<g>` (operators whose SSO identity carries that group at its last sign-in or
// refresh).
import { APPROVER_RE, APPROVER_ROLES } from "@orch/contracts";
import { invalid, type Actor, type Queryable } from "@orch/kit";

interface Approvers {
  names: string[];
  roles: string[];
  groups: string[];
}

export function splitApprovers(list: readonly string[]): Approvers {
  const out: Approvers = { names: [], roles: [], groups: [] };
  for (const a of list) {
    const m = APPROVER_RE.exec(a);
    if (!m) continue;
    const [kind, value] = [m[1]!, m[2]!];
    if (kind === "operator") out.names.push(value);
    else if (kind === "role") out.roles.push(...(value === "operator" ? APPROVER_ROLES : [value]));
    else out.groups.push(value);
  }
  return out;
}

const unknownApprover = (a: string, why: string) =>
  invalid("unknown_approver", `approver '${a}' ${why}`, { field: "approvers", approver: a });

/** A group is known when a mapping rule of an identity provider or an SSO identity names it. */
async function groupKnown(db: Queryable, group: string): Promise<boolean> {
  const r = await db.query<{ known: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM identity_providers p, jsonb_array_elements(p.rules) r WHERE r->'groups' ? $1)
        OR EXISTS (SELECT 1 FROM sso_identities WHERE $1 = ANY(groups)) AS known`,
    [group],
  );
  return r.rows[0]!.known;
}

async function checkApprover(db: Queryable, a: string): Promise<void> {
  const m = APPROVER_RE.exec(a);
  if (!m) throw unknownApprover(a, "is not operator:<name>, role:<role> or group:<group>");
  const [kind, value] = [m[1]!, m[2]!];
  if (kind === "role" && !(APPROVER_ROLES as readonly string[]).includes(value))
    throw unknownApprover(a, "names no role (admin or operator)");
  if (kind === "operator") {
    const r = await db.query("SELECT 1 FROM operators WHERE name = $1", [value]);
    if (!r.rowCount) throw unknownApprover(a, "names no operator");
  }
  if (kind === "group" && !(await groupKnown(db, value)))
    throw unknownApprover(a, "names a group no identity provider rule or SSO identity mentions");
}

/** Refuses approvers that name nothing that exists (`unknown_approver`). */
export async function checkApprovers(db: Queryable, list: readonly string[]): Promise<void> {
  for (const a of list) await checkApprover(db, a);
}

/** Whether `actor` is among `approvers`. */
export async function isEligible(db: Queryable, actor: Actor, approvers: readonly string[]): Promise<boolean> {
  return (await approverTokens(db, actor)).some((t) => approvers.includes(t));
}

/** The active operators `approvers` names, by id: whom a new request notifies. */
export async function eligibleOperatorIds(db: Queryable, approvers: readonly string[]): Promise<string[]> {
  const a = splitApprovers(approvers);
  const r = await db.query<{ id: string }>(
    `SELECT id FROM operators
      WHERE active AND (name = ANY($1) OR role = ANY($2)
             OR id IN (SELECT operator_id FROM sso_identities WHERE groups && $3::text[]))
      ORDER BY id`,
    [a.names, a.roles, a.groups],
  );
  return r.rows.map((x) => x.id);
}

/** The approver strings that name `actor`: its name, its role (every operator is `role:operator`) and its SSO groups. */
export async function approverTokens(db: Queryable, actor: Actor): Promise<string[]> {
  if (actor.type !== "operator") return [];
  const r = await db.query<{ groups: string[] }>("SELECT groups FROM sso_identities WHERE operator_id = $1", [
    actor.id,
  ]);
  const groups = r.rows[0]?.groups ?? [];
  const roles = actor.role === "admin" ? ["role:admin", "role:operator"] : ["role:operator"];
  return [`operator:${actor.name}`, ...roles, ...groups.map((g) => `group:${g}`)];
}
