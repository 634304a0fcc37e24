/**
 * The API's own input rules, imported from the contracts so a value the console accepts is one the
 * gateway accepts: errors show while typing instead of after a round trip.
 */
import { checkName } from "@orch/contracts/rules/names";
import { checkAgentName, checkTagKey, checkTagValue } from "@orch/contracts/rules/agents";

export { checkAgentName, checkTagKey, checkTagValue };

/** The message for a name typed at approval, or undefined when it passes (blank is not yet an error). */
export function agentNameError(name: string): string | undefined {
  if (name === "") return undefined;
  const v = checkAgentName(name);
  return v ? `Name ${v.message}` : undefined;
}

/** Messages for a tag being added; blank fields are not yet an error. */
export function tagErrors(key: string, value: string): { key?: string; value?: string } {
  const k = key === "" ? null : checkTagKey(key);
  const v = checkTagValue(value);
  return {
    ...(k ? { key: `Key ${k.message.replace(/^\(tag key\) /, "")}` } : {}),
    ...(v ? { value: `Value ${v.message.replace(/^\(tag value\) /, "")}` } : {}),
  };
}

/** Operator names follow the module/assignment name rule. */
export function operatorNameError(name: string): string | undefined {
  if (name === "") return undefined;
  const v = checkName(name);
  return v ? `Name ${v.message}` : undefined;
}
