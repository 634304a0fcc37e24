import { escapeBytes } from "./runs.js";

/** The frozen content of a catalog.write change request (services/state/src/approvals/catalog-content.ts). */
interface CatalogWriteContent {
  kind?: string;
  op?: string;
  name?: string;
  base_hash?: string | null;
  after?: Record<string, unknown> | null;
  diff?: {
    fields?: { field: string; before: unknown; after: unknown }[];
    lines?: { line: number; removed: string[]; added: string[]; truncated: boolean };
    before_sha256?: string | null;
  };
}

/** The requester wrote this text: the approver's terminal shows its control characters, never obeys them. */
const safe = (s: string) => escapeBytes(Buffer.from(s, "utf8"));
const shown = (v: unknown) => safe(v === null || v === undefined ? "-" : JSON.stringify(v));

/**
 * What a catalog.write request would change, for `orchctl requests show`: an assignment's changed
 * fields (before → after), or a module's new version and the changed lines of its YAML.
 */
export function catalogWriteRequestLines(content: unknown): string[] {
  const c = (content ?? {}) as CatalogWriteContent;
  const lines = [`frozen change: ${c.op ?? "?"} ${c.kind ?? "?"} ${safe(c.name ?? "?")}`];
  if (c.base_hash) lines.push(`  against:  ${c.kind} as stored with hash ${c.base_hash.slice(0, 12)}`);
  if (c.kind === "module" && c.after)
    lines.push(
      `  version:  sha256 ${String(c.after.sha256 ?? "?").slice(0, 12)}, ${c.after.resources ?? "?"} resource(s)`,
    );
  const fields = c.diff?.fields ?? [];
  if (fields.length) {
    lines.push("  changes:");
    for (const f of fields) lines.push(`    ${f.field}: ${shown(f.before)} → ${shown(f.after)}`);
  }
  const d = c.diff?.lines;
  if (d && (d.removed.length || d.added.length)) {
    lines.push(
      `  diff (from line ${d.line}${c.diff?.before_sha256 ? `, was ${c.diff.before_sha256.slice(0, 12)}` : ""}):`,
    );
    for (const l of d.removed) lines.push(`    - ${safe(l)}`);
    for (const l of d.added) lines.push(`    + ${safe(l)}`);
    if (d.truncated) lines.push("    … (cut: orchctl modules show for the whole module)");
  }
  return lines;
}
