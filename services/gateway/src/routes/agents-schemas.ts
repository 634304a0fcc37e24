import { z } from "zod";
import {
  AGENT_NAME_RE,
  AGENT_NAME_RULE,
  DISCOVERY_TARGET_RULE,
  SELECTOR_MAX_LENGTH,
  checkAgentName,
  checkAgentRef,
  checkDiscoveryTarget,
  checkNodeId,
  checkTagKey as tagKeyRule,
  checkTags as tagsRule,
  checkTagValue as tagValueRule,
  TAG_KEY_RULE,
  TAG_VALUE_RULE,
  type Violation,
} from "@orch/contracts";
import { invalid } from "@orch/kit";
import { ruled } from "../schemas.js";

/**
 * The agents service's rules (from @orch/contracts), checked here too so bad input never reaches
 * the bus. They run in the handlers rather than the schemas so the codes and `field` match what
 * the service answers: a client sees one contract.
 */
export { MAX_TAGS } from "@orch/contracts";
export const NAME_RULE = `must be ${AGENT_NAME_RULE}`;
export const KEY_RULE = `must be ${TAG_KEY_RULE}`;
export const VALUE_RULE = `must be ${TAG_VALUE_RULE}`;

/** A 400 naming the field, with the same `errors` list the gateway's schema failures carry. */
export function fieldError(
  location: "body" | "path" | "query",
  field: string,
  message: string,
  reason: Violation["reason"] = "invalid_request",
) {
  return invalid(reason, `${location} field '${field}' ${message}`, { field, errors: [{ location, field, message }] });
}

const refuse = (v: Violation, location: "body" | "path" | "query", field: string) =>
  fieldError(location, field, v.message, v.reason);

export function checkName(name: string | null | undefined): string {
  const v = checkAgentName(name);
  if (v) throw refuse(v, "body", "name");
  return name!;
}

export function checkTagKey(key: string, location: "body" | "path", field: string): void {
  const v = tagKeyRule(key);
  if (v) throw refuse(v, location, field);
}

export function checkTagValue(value: string, field: string): void {
  const v = tagValueRule(value);
  if (v) throw refuse(v, "body", field);
}

export function checkTags(tags: Record<string, string>): void {
  const v = tagsRule(tags);
  if (v) throw refuse(v, "body", v.field);
}

/** Path reference to an agent: its 32-hex node id or its approved name (the service resolves both). */
export const AgentRef = ruled(checkAgentRef, AGENT_NAME_RE);
export const AgentParams = z.object({ node_id: AgentRef });

export const AgentStatus = z.enum(["pending", "approved", "rejected"]);

/** host:port with a hostname, IPv4 address or [IPv6] address and a port 1..65535. */
export const validTarget = (t: string) => !checkDiscoveryTarget(t);
export const TARGET_RULE = DISCOVERY_TARGET_RULE;

// Shape only: the grammar is checked by the agents service with the shared parser (400 invalid_selector).
export const SelectorQuery = z
  .string()
  .max(SELECTOR_MAX_LENGTH)
  .describe(
    "agent selector (assignment grammar: `k=v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma = and; keys are tags, `name`, `node_id`, `attr.<attribute>`; `*` globs in values), AND-ed with the caller's scope; empty = no filter",
  );

export const isNodeId = (ref: string) => !checkNodeId(ref);

// Shapes only: the rules are checked in the handlers so their codes match the agents service's.
export const TagParams = z.object({ node_id: AgentRef, key: z.string().describe(`tag key; ${KEY_RULE}`) });
export const TagValueField = z.string().describe(`tag value; ${VALUE_RULE}`);
