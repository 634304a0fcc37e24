/** A live replica beats this often; a run silent for HEARTBEAT_STALE_MS is taken as interrupted. */
export const HEARTBEAT_MS = 10_000;
export const HEARTBEAT_STALE_MS = 60_000;
