/**
 * One identity provider (/identity-providers/:name?edit=1, admins): its settings and its mapping
 * rules in order; "Edit" opens the form, "Delete" asks first. Never the client secret (the API does
 * not return it; the form's secret field is write-only).
 */
import { useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import { useSession } from "../api/session";
import { useDeleteIdentityProvider, useIdentityProvider, useSaveIdentityProvider } from "../api/sso";
import { useUrlState } from "../lib/url-state";
import { Badge, Banner, DeleteWithConfirm, Page, QueryStatus, Section, Time } from "../ui";
import { ProviderForm } from "./identity-providers/provider-form";
import { RulesTable } from "./identity-providers/rules";
import "./pages.css";

export default function IdentityProviderPage() {
  const { name = "" } = useParams<{ name: string }>();
  const { isAdmin } = useSession();
  const [params, setParams] = useUrlState();
  const [, navigate] = useLocation();
  const editing = isAdmin && params.get("edit") === "1";
  const save = useSaveIdentityProvider();
  const remove = useDeleteIdentityProvider();
  const [saved, setSaved] = useState(false);
  const q = useIdentityProvider(name);
  const p = q.data;
  return (
    <Page
      title={`Identity provider ${name}`}
      actions={
        isAdmin && p ? (
          <>
            {editing ? null : (
              <button
                type="button"
                className="btn"
                onClick={() => {
                  save.reset();
                  setSaved(false);
                  setParams({ edit: "1" });
                }}
              >
                Edit
              </button>
            )}
            <DeleteWithConfirm
              mutation={remove}
              target={p.name}
              title={`Delete identity provider ${p.name}?`}
              onDeleted={() => navigate("/identity-providers")}
            >
              <p>
                Its sign-in button goes away and operators it provisioned can no longer sign in through it. This cannot
                be undone.
              </p>
            </DeleteWithConfirm>
          </>
        ) : null
      }
    >
      <p>
        <Link href="/identity-providers">← All identity providers</Link>
      </p>
      {saved ? <Banner kind="success">Saved.</Banner> : null}
      <QueryStatus query={q}>
        {p ? (
          <>
            {editing ? (
              <Section title="Edit">
                <ProviderForm
                  key={p.updated_at}
                  provider={p}
                  submitLabel="Save"
                  pending={save.isPending}
                  error={save.error}
                  onSubmit={({ body }) =>
                    save.mutate(
                      { name: p.name, body },
                      {
                        onSuccess: () => {
                          setSaved(true);
                          setParams({ edit: undefined }, { replace: true });
                        },
                      },
                    )
                  }
                  extra={
                    <button type="button" className="btn" onClick={() => setParams({ edit: undefined })}>
                      Cancel
                    </button>
                  }
                />
              </Section>
            ) : null}
            <Section title="Settings">
              <dl className="props card">
                <dt>Button</dt>
                <dd>Sign in with {p.display_name}</dd>
                <dt>Status</dt>
                <dd>{p.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="neutral">disabled</Badge>}</dd>
                <dt>Issuer</dt>
                <dd className="mono">{p.issuer}</dd>
                <dt>Client id</dt>
                <dd className="mono">{p.client_id}</dd>
                <dt>Client secret</dt>
                <dd>{p.has_client_secret ? "stored (sealed, never shown)" : "none (public client)"}</dd>
                <dt>Scopes</dt>
                <dd className="mono">{p.scopes.join(" ")}</dd>
                <dt>Groups claim</dt>
                <dd className="mono">{p.groups_claim}</dd>
                <dt>Allowed domains</dt>
                <dd>{p.allowed_domains.length ? p.allowed_domains.join(", ") : <span className="muted">any</span>}</dd>
                <dt>Refresh</dt>
                <dd>every {p.refresh_interval_seconds} s against the provider</dd>
                <dt>Device flow</dt>
                <dd>{p.device_flow ? "offered (orchctl login --sso uses it)" : "not offered (loopback redirect)"}</dd>
                <dt>Updated</dt>
                <dd>
                  <Time value={p.updated_at} />
                </dd>
              </dl>
            </Section>
            <Section title="Mapping rules (first match wins)">
              <RulesTable rules={p.rules} />
            </Section>
          </>
        ) : null}
      </QueryStatus>
    </Page>
  );
}
