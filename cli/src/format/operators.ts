/** Operators: listings, details, the session's own operator, and what a change did (pure). */
import type { Operator, Whoami } from "@orch/client";
import { idsOnly, type OperatorNames } from "../operator-names.js";

/** `name (role)`, how login names whom the session belongs to. */
export const operatorLine = (op: { name: string; role: string }) => `${op.name} (${op.role})`;

/** An operator without an agent selector reaches every agent. */
const scope = (o: Pick<Operator, "agent_selector">) => o.agent_selector ?? "(all agents)";

export const OPERATOR_COLUMNS = ["NAME", "ID", "ROLE", "ACTIVE", "SCOPE", "CREATED"];

export function operatorRows(ops: readonly Operator[]): unknown[][] {
  return ops.map((o) => [o.name, o.id, o.role, o.active ? "yes" : "no", scope(o), o.created_at]);
}

/** `key`, or `sso:<provider> (rule <name>)` for an operator single sign-on provisioned. */
const source = (o: Pick<Operator, "source" | "sso_rule">) =>
  o.sso_rule ? `${o.source} (rule ${o.sso_rule})` : o.source;

export function operatorFields(op: Operator, names: OperatorNames = idsOnly): [string, unknown][] {
  return [
    ["name", op.name],
    ["id", op.id],
    ["role", op.role],
    ["active", op.active],
    ["source", source(op)],
    ["public_key", op.public_key],
    ["agent_selector", scope(op)],
    ["created_at", op.created_at],
    ["created_by", names(op.created_by)],
  ];
}

/** whoami: the operator's own record and the server it is logged in to. */
export function whoamiFields(op: Whoami, server: string, names: OperatorNames = idsOnly): [string, unknown][] {
  return [
    ["name", op.name],
    ["id", op.id],
    ["role", op.role],
    ["active", op.active],
    ["public_key", op.public_key],
    ["created_at", op.created_at],
    ["created_by", names(op.created_by)],
    ["server", server],
  ];
}

export function addedLine(op: Operator): string {
  const shown = op.agent_selector ? `, scope '${op.agent_selector}'` : "";
  return `Added operator ${op.name} (${op.role}${shown}), id ${op.id}`;
}

export const scopeLine = (op: Operator) =>
  op.agent_selector
    ? `Operator ${op.name} now reaches agents matching '${op.agent_selector}'`
    : `Operator ${op.name} now reaches every agent`;
