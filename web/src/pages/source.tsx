/**
 * One git source (/sources/:name): where it syncs from, the commit in force, the last failure with
 * its per-file errors (file, line, code), and what it manages. Admins may "Sync now" (the API allows
 * only admins); a failed sync changes nothing, so the previous commit stays in force.
 */
import { Link, useParams } from "wouter";
import { useAssignments } from "../api/assignments";
import { useModules } from "../api/modules";
import { useSession } from "../api/session";
import { type Source, useSource, useSyncSource } from "../api/sources";
import { Banner, EmptyState, Page, ProblemMessage, QueryStatus, Section, Time } from "../ui";
import "./pages.css";
import { ItemTable } from "./parts/item-table";
import { FileErrors } from "./sources/file-errors";
import { ownerOf } from "./sources/managed-by";
import { CommitRef, SourceStatus } from "./sources/source-status";
import "./sources/sources.css";

export default function SourcePage() {
  const { name = "" } = useParams<{ name: string }>();
  const { isAdmin } = useSession();
  const source = useSource(name);
  const s = source.data;
  const sync = useSyncSource(name);
  return (
    <Page
      title={name}
      actions={
        s && isAdmin ? (
          <button type="button" className="btn btn-primary" disabled={sync.isPending} onClick={() => sync.mutate()}>
            {sync.isPending ? "Syncing…" : "Sync now"}
          </button>
        ) : null
      }
    >
      {sync.error ? <ProblemMessage error={sync.error} /> : null}
      {sync.isSuccess && !sync.isPending ? (
        <p className="muted" role="status" data-testid="sync-result">
          Sync finished: {sync.data.status === "ok" ? "in step with the repository" : "it failed (see below)"}.
        </p>
      ) : null}
      <QueryStatus query={source}>
        {s ? (
          <>
            <SourceProps source={s} />
            <LastFailure source={s} />
            <Managed name={s.name} />
          </>
        ) : null}
      </QueryStatus>
    </Page>
  );
}

function SourceProps({ source: s }: { source: Source }) {
  return (
    <dl className="props card">
      <dt>Status</dt>
      <dd>
        <SourceStatus status={s.status} />
      </dd>
      <dt>URL</dt>
      <dd className="mono source-url">{s.url}</dd>
      <dt>Branch</dt>
      <dd className="mono">{s.branch}</dd>
      <dt>Path</dt>
      <dd className="mono">{s.path || <span className="muted">(repository root)</span>}</dd>
      <dt>Commit in force</dt>
      <dd>
        <CommitRef commit={s.commit} />
      </dd>
      <dt>Synced</dt>
      <dd>
        <Time value={s.synced_at} fallback="never" />
      </dd>
      <dt>Last attempt</dt>
      <dd>
        <Time value={s.attempted_at} fallback="never" />
      </dd>
      <dt>Next sync</dt>
      <dd>
        <Time value={s.next_sync_at} /> <span className="muted">(every {s.interval_s} s, or on a push webhook)</span>
      </dd>
      <dt>Credentials</dt>
      <dd>{s.auth === "none" ? "none (public repository)" : s.auth === "token" ? "HTTPS token" : "SSH deploy key"}</dd>
      <dt>Created</dt>
      <dd>
        <Time value={s.created_at} /> by {s.created_by}
      </dd>
    </dl>
  );
}

/** The last attempt's failure: what git or validation said, and every file error with its line. */
function LastFailure({ source: s }: { source: Source }) {
  if (s.status !== "error" && s.errors.length === 0) return null;
  const tried = s.attempted_commit ? s.attempted_commit.slice(0, 7) : "";
  return (
    <Section title="Last sync failed">
      <Banner kind="error" testId="source-error" className="source-failure">
        <p className="source-error-reason">{s.error || "The last sync failed."}</p>
        <p>
          {tried ? `Commit ${tried} was refused` : "The repository could not be read"}
          {s.failures > 1 ? ` (${s.failures} attempts in a row)` : ""}. Nothing changed:{" "}
          {s.commit ? `commit ${s.commit.slice(0, 7)} stays in force.` : "nothing was taken from the repository yet."}
        </p>
      </Banner>
      {s.errors.length > 0 ? <FileErrors errors={s.errors} /> : null}
    </Section>
  );
}

/** The modules and assignments this source owns (read from the catalog, so they link to their pages). */
function Managed({ name }: { name: string }) {
  const modules = useModules();
  const assignments = useAssignments();
  const mine = <T extends { name: string; source?: string | null }>(items: readonly T[] | undefined) =>
    (items ?? []).filter((o) => ownerOf(o)?.source === name);
  return (
    <>
      <Section title="Modules">
        <QueryStatus query={modules}>
          <ItemTable
            label="Managed modules"
            columns={["Name", "Description"]}
            items={mine(modules.data)}
            empty={<EmptyState title="No modules from this source." />}
          >
            {(m) => (
              <tr key={m.name}>
                <td>
                  <Link href={`/modules/${encodeURIComponent(m.name)}`}>{m.name}</Link>
                </td>
                <td>{m.description || <span className="muted">—</span>}</td>
              </tr>
            )}
          </ItemTable>
        </QueryStatus>
      </Section>
      <Section title="Assignments">
        <QueryStatus query={assignments}>
          <ItemTable
            label="Managed assignments"
            columns={["Name", "Selector", "Apply on sync"]}
            items={mine(assignments.data)}
            empty={<EmptyState title="No assignments from this source." />}
          >
            {(a) => (
              <tr key={a.name}>
                <td>
                  <Link href={`/assignments/${encodeURIComponent(a.name)}`}>{a.name}</Link>
                </td>
                <td className="mono">{a.selector}</td>
                <td>{a.apply_on_sync ? "yes" : "no"}</td>
              </tr>
            )}
          </ItemTable>
        </QueryStatus>
      </Section>
    </>
  );
}
