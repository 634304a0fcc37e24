/**
 * The transcript's integrity check, done in the browser: SHA-256 over the bytes exactly as
 * downloaded, compared with the checksum the terminal service stored when it sealed the file.
 */
export type ChecksumStatus = "SHA-256 matches" | "SHA-256 does not match" | "no checksum";

export function toHex(digest: ArrayBuffer): string {
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Needs a secure context (https, or localhost): elsewhere `crypto.subtle` does not exist. */
export async function sha256Hex(bytes: ArrayBuffer): Promise<string> {
  if (!globalThis.crypto?.subtle) throw new Error("this page is not a secure context: no SHA-256 in the browser");
  return toHex(await crypto.subtle.digest("SHA-256", bytes));
}

/** `expected` is the API's stored checksum (null while the session is live or when none was stored). */
export function checksumStatus(computed: string, expected: string | null | undefined): ChecksumStatus {
  if (!expected) return "no checksum";
  return computed.toLowerCase() === expected.trim().toLowerCase() ? "SHA-256 matches" : "SHA-256 does not match";
}
