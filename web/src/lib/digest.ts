/** Content digests as the console shows them: pure, so it is unit-tested. */

/**
 * "sha256:<64 hex>" → "sha256:0123456789ab…" (12 hex digits, as SHA-256s show elsewhere in the
 * console); anything else longer than 19 characters is cut there.
 */
export function shortDigest(digest: string): string {
  const m = /^([a-z0-9]+):([0-9a-f]+)$/i.exec(digest);
  if (!m) return digest.length > 19 ? `${digest.slice(0, 19)}…` : digest;
  const [, algo, hex = ""] = m;
  return hex.length > 12 ? `${algo}:${hex.slice(0, 12)}…` : digest;
}
