/**
 * Identity providers (/identity-providers?new=1, admins): the OIDC providers operators sign in with,
 * and how many mapping rules each has; "Add provider" opens the form (docs/sso.md). The client
 * secret is write-only: never shown, only whether one is stored.
 */
import { useState } from "react";
import { Link } from "wouter";
import { useSession } from "../api/session";
import { useIdentityProviders, useSaveIdentityProvider } from "../api/sso";
import { useUrlState } from "../lib/url-state";
import { Badge, Banner, EmptyState, Page, QueryStatus, Section, Time } from "../ui";
import { ProviderForm } from "./identity-providers/provider-form";
import "./pages.css";
import { TableRegion } from "./parts/table-region";

export default function IdentityProvidersPage() {
  const { isAdmin } = useSession();
  const [params, setParams] = useUrlState();
  const [added, setAdded] = useState<string | undefined>();
  const creating = isAdmin && params.get("new") === "1";
  const save = useSaveIdentityProvider();
  const list = useIdentityProviders();
  const providers = list.data ?? [];
  return (
    <Page
      title="Identity providers"
      actions={
        isAdmin && !creating ? (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              save.reset();
              setAdded(undefined);
              setParams({ new: "1" });
            }}
          >
            Add provider
          </button>
        ) : null
      }
    >
      {creating ? (
        <Section title="New identity provider">
          <ProviderForm
            submitLabel="Add provider"
            pending={save.isPending}
            error={save.error}
            onSubmit={({ name, body }) =>
              save.mutate(
                { name, body },
                {
                  onSuccess: (p) => {
                    setAdded(p.name);
                    setParams({ new: undefined }, { replace: true });
                  },
                },
              )
            }
            extra={
              <button type="button" className="btn" onClick={() => setParams({ new: undefined })}>
                Cancel
              </button>
            }
          />
        </Section>
      ) : null}
      {added ? (
        <Banner kind="success">
          Added identity provider <Link href={`/identity-providers/${encodeURIComponent(added)}`}>{added}</Link>.
        </Banner>
      ) : null}
      <Section title="Single sign-on">
        <QueryStatus query={list}>
          {providers.length ? (
            <TableRegion label="Identity providers">
              <table className="table">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Button</th>
                    <th>Issuer</th>
                    <th>Status</th>
                    <th>Rules</th>
                    <th>Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {providers.map((p) => (
                    <tr key={p.id}>
                      <td>
                        <Link href={`/identity-providers/${encodeURIComponent(p.name)}`}>{p.name}</Link>
                      </td>
                      <td>Sign in with {p.display_name}</td>
                      <td className="mono truncate">{p.issuer}</td>
                      <td>
                        {p.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="neutral">disabled</Badge>}
                        {p.device_flow ? <Badge tone="neutral">device flow</Badge> : null}
                      </td>
                      <td>{p.rules.length}</td>
                      <td>
                        <Time value={p.updated_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableRegion>
          ) : (
            <EmptyState title="No identity providers.">
              {isAdmin ? "Add one with “Add provider”" : "An admin can add one"}, or with{" "}
              <code>orchctl identity-providers put</code> (docs/sso.md).
            </EmptyState>
          )}
        </QueryStatus>
      </Section>
    </Page>
  );
}
