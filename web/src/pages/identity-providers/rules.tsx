/** A provider's mapping rules as a table, in order (first match wins); shared by the list and detail pages. */
import type { MappingRule } from "../../api/sso";
import { Badge, EmptyState } from "../../ui";
import { TableRegion } from "../parts/table-region";

/** The conditions of a rule in words: "groups ops or sre; email *@example.com"; "anyone" when none. */
export function ruleConditions(r: MappingRule): string {
  const parts = [
    r.groups.length ? `groups ${r.groups.join(" or ")}` : "",
    r.email ? `email ${r.email}` : "",
    r.domains.length ? `domain ${r.domains.join(" or ")}` : "",
  ].filter(Boolean);
  return parts.length ? parts.join("; ") : "anyone";
}

export function RulesTable({ rules }: { rules: MappingRule[] }) {
  if (!rules.length) return <EmptyState title="No mapping rules: nobody can sign in through this provider." />;
  return (
    <TableRegion label="Mapping rules">
      <table className="table">
        <thead>
          <tr>
            <th>#</th>
            <th>Rule</th>
            <th>When</th>
            <th>Role</th>
            <th>Scope</th>
          </tr>
        </thead>
        <tbody>
          {rules.map((r, i) => (
            // Rules have no id; their order is their identity.
            // biome-ignore lint/suspicious/noArrayIndexKey: the position is what a rule is known by.
            <tr key={i}>
              <td>{i}</td>
              <td>{r.name || `rule ${i}`}</td>
              <td className="mono">{ruleConditions(r)}</td>
              <td>
                <Badge tone={r.role === "admin" ? "info" : "neutral"}>{r.role}</Badge>
              </td>
              <td className="mono">
                {r.role === "admin" ? (
                  <span className="muted">—</span>
                ) : (
                  (r.agent_selector ?? <span className="muted">all agents</span>)
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}
