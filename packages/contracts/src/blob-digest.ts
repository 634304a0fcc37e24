/**
 * Blobs are named by the SHA-256 of their content: `sha256:` and 64 lowercase hex digits. The API
 * path, the state service, module file sources and the agent's cache all read digests through here.
 */
export const BLOB_DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The 64 hex digits of a valid digest, or undefined. */
export function blobHex(digest: string): string | undefined {
  return BLOB_DIGEST.test(digest) ? digest.slice("sha256:".length) : undefined;
}

/**
 * Largest piece of a blob in one bus message, both ways (operator → state service, state service →
 * agent): well under NATS's default 1 MiB max_payload with room for headers, and big enough that a
 * 1 GiB blob is 4,096 round trips.
 */
export const BLOB_CHUNK_BYTES = 256 * 1024;
