/**
 * Metadata flag of an audit event that is recorded but reaches no operator inbox and no channel,
 * whatever their severity filters say. For events an anonymous caller can cause at will (a login
 * attempt with an unknown key) and repeats already notified once (a burst of failures against one
 * operator): severity alone cannot express it, since a channel may subscribe to `info`.
 */
export const UNNOTIFIED_FLAG = "unnotified";

export const isUnnotified = (metadata: Record<string, unknown> | undefined): boolean =>
  metadata?.[UNNOTIFIED_FLAG] === true;
