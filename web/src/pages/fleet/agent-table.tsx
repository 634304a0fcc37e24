// biome-ignore-all lint/a11y/useSemanticElements: virtualised rows are absolutely positioned divs; <table> layout cannot hold them, so the ARIA table roles carry the semantics.
// biome-ignore-all lint/a11y/useFocusableInteractive: rows and headers are not interactive here (no grid navigation); their links are.
// biome-ignore-all lint/a11y/noNoninteractiveTabindex: the scroll container must be focusable so keyboard users can scroll it (axe scrollable-region-focusable).
/**
 * Thousands of agents in a virtualised ARIA table: only the visible rows exist in the DOM, each of
 * a fixed height, so scrolling 5,000 rows stays smooth. Rows are keyed by node id, so a poll that
 * returns the same agents keeps the scroll position and the DOM nodes.
 */
import { useVirtualizer } from "@tanstack/react-virtual";
import { memo, useEffect, useRef } from "react";
import { Link } from "wouter";
import type { Agent } from "../../api/agents";
import { osLabel, tagList } from "../../lib/agent-format";
import { Badge, EmptyState, Time, toneOf } from "../../ui";
import { useNarrow } from "../../ui/use-narrow";
import { DriftBadge } from "./drift-badge";
import "./fleet.css";

export const ROW_HEIGHT = 40;
const COLUMNS = ["Name", "Node ID", "Status", "Connected", "Drift", "Last seen", "OS", "Tags"] as const;
/** A row as a card at phone width (pages.css, .vtable.cards): one 25 px line per column. */
const CARD_HEIGHT = COLUMNS.length * 25 + 12;

export function AgentTable({ agents }: { agents: Agent[] }) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const narrow = useNarrow();
  const virtualizer = useVirtualizer({
    count: agents.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => (narrow ? CARD_HEIGHT : ROW_HEIGHT),
    getItemKey: (i) => agents[i]?.node_id ?? i,
    overscan: 10,
  });
  const items = virtualizer.getVirtualItems();
  // biome-ignore lint/correctness/useExhaustiveDependencies: the rows' size follows `narrow`: place them again when it changes.
  useEffect(() => {
    virtualizer.measure();
  }, [narrow, virtualizer]);

  return (
    <div
      ref={scrollRef}
      className="table vtable cards fleet-agents"
      role="table"
      aria-label="Agents"
      aria-rowcount={agents.length + 1}
      // The scroll container is focusable so keyboard users can scroll it.
      tabIndex={0}
    >
      <div role="rowgroup" className="vtable-head">
        <div role="row" aria-rowindex={1} className="vtable-row">
          {COLUMNS.map((c) => (
            <div key={c} role="columnheader">
              {c}
            </div>
          ))}
        </div>
      </div>
      <div role="rowgroup" className="vtable-body" style={{ height: virtualizer.getTotalSize() }}>
        {items.map((item) => {
          const agent = agents[item.index];
          if (!agent) return null;
          return (
            <AgentRow key={item.key} agent={agent} rowIndex={item.index + 2} top={item.start} height={item.size} />
          );
        })}
      </div>
      {agents.length === 0 ? (
        <div className="vtable-empty">
          <EmptyState title="No agents match.">Change the selector or the status filter.</EmptyState>
        </div>
      ) : null}
    </div>
  );
}

const AgentRow = memo(function AgentRow({
  agent,
  rowIndex,
  top,
  height,
}: {
  agent: Agent;
  rowIndex: number;
  top: number;
  height: number;
}) {
  const tags = tagList(agent.tags);
  const os = osLabel(agent.attributes);
  return (
    <div
      role="row"
      aria-rowindex={rowIndex}
      className="vtable-row"
      style={{ height, transform: `translateY(${top}px)` }}
    >
      <div role="cell" className="truncate" data-label="Name">
        <Link href={`/agents/${agent.node_id}`}>{agent.name ?? agent.node_id.slice(0, 12)}</Link>
      </div>
      <div role="cell" className="mono truncate" title={agent.node_id} data-label="Node ID">
        {agent.node_id}
      </div>
      <div role="cell" data-label="Status">
        <Badge tone={toneOf(agent.status)}>{agent.status}</Badge>
      </div>
      <div role="cell" data-label="Connected">
        <Badge tone={agent.connected ? "ok" : "neutral"}>{agent.connected ? "yes" : "no"}</Badge>
      </div>
      <div role="cell" data-label="Drift">
        {agent.status === "approved" ? <DriftBadge nodeId={agent.node_id} /> : "—"}
      </div>
      <div role="cell" data-label="Last seen">
        <Time value={agent.last_seen} />
      </div>
      <div role="cell" className="truncate" title={os} data-label="OS">
        {os}
      </div>
      <div role="cell" className="truncate chips" title={tags.join(", ")} data-label="Tags">
        {tags.map((t) => (
          <span key={t} className="chip">
            {t}
          </span>
        ))}
      </div>
    </div>
  );
});
