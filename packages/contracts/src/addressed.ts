/**
 * Metadata key of an audit event meant for named operators (the approvers of a change request, say):
 * its inbox notifications go to those operators only, and reach them whatever the inbox's minimum
 * severity, because the event asks them to act. Channels still follow their own filters.
 */
export const NOTIFY_OPERATORS_KEY = "notify_operator_ids";

/** The operator ids an event is addressed to, or undefined for an event meant for every operator. */
export function addressedTo(metadata: Record<string, unknown> | undefined): string[] | undefined {
  const v = metadata?.[NOTIFY_OPERATORS_KEY];
  if (!Array.isArray(v)) return undefined;
  return v.filter((x): x is string => typeof x === "string" && x.length > 0);
}
