/**
 * Notify's outgoing-target policy as both sides name it: the server refuses deliveries to
 * non-public addresses unless this setting is on, and orchctl warns when a channel URL points at
 * one. The address classification itself is the kit's (`@orch/kit/addresses`).
 */
export const ALLOW_PRIVATE_TARGETS = { section: "notify", key: "allow_private_targets" } as const;
