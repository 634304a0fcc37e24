/**
 * One module (/modules/:name): its YAML (highlighted, read-only, with line numbers), a bundle's
 * files, what it is, the assignments that use it, and its upload history. Operators and admins may
 * upload a new version or delete it (the API refuses deleting a module an assignment still uses,
 * and says which).
 */
import { Suspense, useRef, useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import { useAssignments } from "../api/assignments";
import { type ModuleInfo, useDeleteModule, useModule } from "../api/modules";
import { YamlEditor } from "../editor";
import { Banner, DeleteWithConfirm, Loading, Page, QueryStatus, Section, Time } from "../ui";
import { BundleFiles } from "./modules/bundle-files";
import { VersionHistory } from "./modules/version-history";
import "./pages.css";
import { ManagedByBanner, ownerOf } from "./sources/managed-by";
import type { HeldCatalogWrite } from "../api/catalog-held";
import { CatalogHeldNotice } from "./catalog-held-notice";

export default function ModulePage() {
  const { name = "" } = useParams<{ name: string }>();
  const module = useModule(name);
  const m = module.data;
  return (
    // A module a git source owns is changed in its repository: no upload or delete here.
    <Page title={name} actions={m && !ownerOf(m) ? <ModuleActions name={m.name} /> : null}>
      <QueryStatus query={module}>{m ? <ModuleBody module={m} /> : null}</QueryStatus>
    </Page>
  );
}

function ModuleActions({ name }: { name: string }) {
  const [, navigate] = useLocation();
  // A held delete is heard of (the hook's onSuccess) before onDeleted runs, which shows it.
  const heldDelete = useRef<HeldCatalogWrite | undefined>(undefined);
  const [held, setHeld] = useState<HeldCatalogWrite | undefined>();
  const remove = useDeleteModule((h) => {
    heldDelete.current = h;
  });
  return (
    <>
      {held ? <CatalogHeldNotice held={held} /> : null}
      <Link href={`/modules/${encodeURIComponent(name)}/upload`} className="btn btn-primary">
        Upload new version
      </Link>
      <DeleteWithConfirm
        mutation={remove}
        target={name}
        title={`Delete module ${name}?`}
        onDeleted={() => (heldDelete.current ? setHeld(heldDelete.current) : navigate("/modules"))}
      >
        <p>Agents keep what was applied; assignments can no longer use it. A module in use cannot be deleted.</p>
      </DeleteWithConfirm>
    </>
  );
}

function ModuleBody({ module: m }: { module: ModuleInfo }) {
  const assignments = useAssignments();
  const users = (assignments.data ?? []).filter((a) => a.modules.includes(m.name));
  const owner = ownerOf(m);
  return (
    <>
      {owner ? <ManagedByBanner owner={owner} what="module" /> : null}
      {m.removed_from_source ? (
        <Banner kind="warning" testId="removed-from-source">
          Removed from its repository: it is deleted once no assignment uses it.
        </Banner>
      ) : null}
      <dl className="props card">
        <dt>Description</dt>
        <dd>{m.description || "—"}</dd>
        <dt>Resources</dt>
        <dd>{m.resource_count}</dd>
        <dt>Uploaded</dt>
        <dd>
          <Time value={m.uploaded_at * 1000} />
        </dd>
        <dt>SHA-256</dt>
        <dd className="mono">{m.sha256}</dd>
        <dt>Used by</dt>
        <dd>
          {assignments.data === undefined ? (
            "…"
          ) : users.length === 0 ? (
            <span className="muted">no assignment</span>
          ) : (
            users.map((a, i) => (
              <span key={a.name}>
                {i > 0 ? ", " : null}
                <Link href={`/assignments/${encodeURIComponent(a.name)}`}>{a.name}</Link>
              </span>
            ))
          )}
        </dd>
      </dl>
      <Section title="YAML">
        <Suspense fallback={<Loading label="Loading the editor…" />}>
          <YamlEditor value={m.content} label={`${m.name} YAML`} readOnly />
        </Suspense>
      </Section>
      <BundleFiles files={m.files} />
      <VersionHistory name={m.name} currentSha256={m.sha256} />
    </>
  );
}
