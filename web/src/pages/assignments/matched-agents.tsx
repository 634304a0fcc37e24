/**
 * The agents an assignment reaches now (the approved agents its selector matches, within the viewer's
 * scope), each with its drift, and when drift is checked and enforced. The list query is the fleet's
 * own (same key), so Apply's confirmation counts exactly the agents shown here.
 */
import { Link } from "wouter";
import { useAllAgents } from "../../api/agents";
import type { Assignment } from "../../api/assignments";
import { useLatestDrift } from "../../api/state";
import { sortAgents } from "../../lib/agent-format";
import { Badge, EmptyState, QueryStatus, Section, Time } from "../../ui";
import { DriftBadge } from "../fleet/drift-badge";
import { ItemTable } from "../parts/item-table";
import { MATCHED_SHOWN } from "./apply-rules";

/** The approved agents `selector` matches (all pages), or undefined while not known. */
export function useMatchedAgents(selector: string) {
  return useAllAgents(selector, "approved", { poll: false });
}

export function MatchedAgents({ assignment: a }: { assignment: Assignment }) {
  const matched = useMatchedAgents(a.selector);
  const all = sortAgents(matched.data ?? []);
  const shown = all.slice(0, MATCHED_SHOWN);
  const fleet = `/agents?${new URLSearchParams({ selector: a.selector, status: "approved" })}`;
  return (
    <Section title="Matched agents">
      <p className="muted" data-testid="enforcement-note">
        {a.enforce
          ? "Enforcement: scheduled drift checks run every hour by default (state.drift_interval_seconds), not during maintenance windows; drift they find on these agents is re-applied right away, at most once per agent every 15 minutes by default (state.enforce_interval_seconds)."
          : "Scheduled drift checks run every hour by default (state.drift_interval_seconds) and only report drift: enforce is off, so nothing is re-applied by itself."}{" "}
        “Check now” on an agent's page checks at once but never re-applies.
      </p>
      <QueryStatus query={matched}>
        <p className="muted" data-testid="matched-count">
          {all.length === 1 ? "1 approved agent matches" : `${all.length} approved agents match`}
          {all.length > shown.length ? (
            <>
              {`; the first ${shown.length} by name are listed. `}
              <Link href={fleet}>All of them in Fleet</Link>
            </>
          ) : null}
        </p>
        <ItemTable
          label="Matched agents"
          className="cards"
          columns={["Name", "Connected", "Drift", "Last drift check"]}
          items={shown}
          empty={
            <EmptyState title="No approved agent matches the selector.">Plan and Apply reach no agent.</EmptyState>
          }
        >
          {(agent) => (
            <tr key={agent.node_id}>
              <td data-label="Name">
                <Link href={`/agents/${encodeURIComponent(agent.node_id)}`}>{agent.name ?? agent.node_id}</Link>
              </td>
              <td data-label="Connected">
                <Badge tone={agent.connected ? "ok" : "neutral"}>{agent.connected ? "yes" : "no"}</Badge>
              </td>
              <td data-label="Drift">
                <DriftBadge nodeId={agent.node_id} />
              </td>
              <td data-label="Last drift check">
                <LastCheck nodeId={agent.node_id} />
              </td>
            </tr>
          )}
        </ItemTable>
      </QueryStatus>
    </Section>
  );
}

/** When the agent's drift was last checked (the same query as its badge: no extra request). */
function LastCheck({ nodeId }: { nodeId: string }) {
  const drift = useLatestDrift(nodeId);
  if (drift.data === undefined) return null;
  return drift.data ? <Time value={drift.data.checked_at} /> : <span className="muted">never</span>;
}
