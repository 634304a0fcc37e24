/**
 * What a `catalog.write` request would change (docs/approvals.md): an assignment's changed fields,
 * before and after, or a module's new version and the changed lines of its YAML. React renders it
 * as text, so nothing the requester wrote is markup.
 */
import type { ChangeRequest } from "../../api/approvals";
import { Section } from "../../ui";

interface CatalogWriteContent {
  kind?: string;
  op?: string;
  name?: string;
  after?: Record<string, unknown> | null;
  diff?: {
    fields?: { field: string; before: unknown; after: unknown }[];
    lines?: { line: number; removed: string[]; added: string[]; truncated: boolean };
    before_sha256?: string | null;
  };
}

const shown = (v: unknown) => (v === null || v === undefined ? "—" : JSON.stringify(v));

export function CatalogWriteContentView({ request: r }: { request: ChangeRequest }) {
  if (r.action !== "catalog.write") return null;
  const c = r.content as CatalogWriteContent;
  const fields = c.diff?.fields ?? [];
  const lines = c.diff?.lines;
  return (
    <Section title="What it would change">
      <dl className="props card" data-testid="request-catalog-write">
        <dt>Change</dt>
        <dd>
          {c.op} {c.kind} <span className="mono">{c.name}</span>
        </dd>
        {c.kind === "module" && c.after ? (
          <>
            <dt>New version</dt>
            <dd className="mono">
              sha256 {String(c.after.sha256 ?? "?").slice(0, 12)}, {String(c.after.resources ?? "?")} resource(s)
            </dd>
          </>
        ) : null}
      </dl>
      {fields.length ? (
        <table className="table" data-testid="request-catalog-fields">
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Before</th>
              <th scope="col">After</th>
            </tr>
          </thead>
          <tbody>
            {fields.map((f) => (
              <tr key={f.field}>
                <td>{f.field}</td>
                <td className="mono">{shown(f.before)}</td>
                <td className="mono">{shown(f.after)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {lines && (lines.removed.length || lines.added.length) ? (
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to be scrolled by keyboard.
        <section className="request-content" tabIndex={0} aria-label={`YAML changes from line ${lines.line}`}>
          <pre className="mono" data-testid="request-catalog-lines">
            {[...lines.removed.map((l) => `- ${l}`), ...lines.added.map((l) => `+ ${l}`)].join("\n")}
            {lines.truncated ? "\n… (cut: the module's page has all of it)" : ""}
          </pre>
        </section>
      ) : null}
    </Section>
  );
}
