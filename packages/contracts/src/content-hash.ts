import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every depth, so equal content always hashes equal. A change
 * request's `content_hash` is the SHA-256 of its content in this form (docs/approvals.md): the
 * service that holds an action and the one that executes it must agree byte for byte.
 */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(",")}}`;
  }
  return JSON.stringify(v ?? null);
}

/** The SHA-256 (hex) of content in canonical JSON: what an approval binds to. */
export const contentHash = (content: unknown): string =>
  createHash("sha256").update(canonicalJson(content)).digest("hex");
