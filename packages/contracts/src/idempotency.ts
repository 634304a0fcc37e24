// The Idempotency-Key rule, shared by the gateway (which refuses a malformed header with 400) and the
// kit's RPC server (which refuses one arriving from any other bus caller).

/** The HTTP request header (IETF httpapi Idempotency-Key draft) and the reply header marking a replay. */
export const IDEMPOTENCY_HEADER = "idempotency-key";
export const IDEMPOTENCY_REPLAYED_HEADER = "idempotency-replayed";

/** How long a stored result is replayed; after that the key may be used again. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/**
 * 1–255 characters that need no escaping anywhere we carry the key (HTTP and NATS headers, logs):
 * enough for UUIDs, ULIDs and random base64url, and nothing that could split or forge a header.
 */
export const IDEMPOTENCY_KEY_RE = /^[A-Za-z0-9._~:+/=-]{1,255}$/;

/**
 * Parses the header value: the draft makes it a structured-field string (`"abc"`); plain tokens
 * are accepted as well since most clients send them bare. Returns undefined when malformed.
 */
export function parseIdempotencyKey(value: string): string | undefined {
  const v = value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
  return IDEMPOTENCY_KEY_RE.test(v) ? v : undefined;
}
