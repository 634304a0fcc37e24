/**
 * What an agent's state feature understands beyond the first StateResource fields, reported as the
 * comma-separated attribute `state_features`. The state service sends a field only to an agent that
 * lists it: an agent that ignored `triggered_by` would report success and never restart anything.
 */
export const STATE_FEATURES_ATTRIBUTE = "state_features";

/** `onchanges` and `triggered_by` (module `onchanges`, `notify`, `watch`; service `refresh`). */
export const STATE_FEATURE_TRIGGERS = "triggers";

/**
 * `file` resources with `source: sha256:…` (a blob): the agent serves AgentBlobService, keeps the
 * blobs it is sent in its cache, and writes a file from the cache only if it hashes to the digest.
 */
export const STATE_FEATURE_BLOBS = "blobs";

/**
 * `archive` resources (a blob, a tar, tar.gz or zip, extracted into a directory): an agent with
 * blobs but without this would fail the resource as an unknown type.
 */
export const STATE_FEATURE_ARCHIVE = "archive";

/**
 * Resource types whose `source:` names a blob: the upload checks it is stored, and the state service
 * ships it into the agent's cache before an apply.
 */
export const BLOB_SOURCE_TYPES: ReadonlySet<string> = new Set(["file", "archive"]);

/** The features an agent's attributes list. */
export const stateFeaturesOf = (attributes: Readonly<Record<string, string>>): Set<string> =>
  new Set((attributes[STATE_FEATURES_ATTRIBUTE] ?? "").split(",").filter(Boolean));

/**
 * Resource types the agent refreshes (restart, or reload with `refresh: reload`) when a resource
 * that notifies them changed: the state service sends `triggered_by` to these only.
 */
export const RESTARTABLE_TYPES: ReadonlySet<string> = new Set(["service", "systemd_unit"]);
