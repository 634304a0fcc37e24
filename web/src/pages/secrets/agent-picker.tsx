/**
 * Picks agents (node ids) from the fleet for a secret's restriction: a filter box and one checkbox per
 * agent, labelled with its name. A large fleet shows only the first matches; picked agents stay listed.
 */
import { useId, useState } from "react";
import type { Agent } from "../../api/agents";

const SHOWN = 50;

export const agentLabel = (a: Pick<Agent, "name" | "node_id">) => a.name || a.node_id;

export function AgentPicker({
  agents,
  selected,
  onChange,
}: {
  agents: Agent[];
  selected: ReadonlySet<string>;
  onChange: (next: Set<string>) => void;
}) {
  const [filter, setFilter] = useState("");
  const filterId = useId();
  const f = filter.trim().toLowerCase();
  const matches = agents.filter(
    (a) => selected.has(a.node_id) || f === "" || agentLabel(a).toLowerCase().includes(f) || a.node_id.startsWith(f),
  );
  const shown = matches.slice(0, SHOWN + selected.size);
  const toggle = (nodeId: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(nodeId);
    else next.delete(nodeId);
    onChange(next);
  };
  return (
    <fieldset className="field agent-picker">
      <legend>Agents</legend>
      <label htmlFor={filterId} className="visually-hidden">
        Find agents
      </label>
      <input
        id={filterId}
        type="search"
        placeholder="Find agents by name or node id"
        value={filter}
        autoComplete="off"
        spellCheck={false}
        onChange={(e) => setFilter(e.target.value)}
      />
      {agents.length === 0 ? <p className="muted">No agents yet.</p> : null}
      <ul className="agent-picker-list">
        {shown.map((a) => (
          <li key={a.node_id}>
            <label className="check">
              <input
                type="checkbox"
                checked={selected.has(a.node_id)}
                onChange={(e) => toggle(a.node_id, e.target.checked)}
              />
              {agentLabel(a)}
            </label>{" "}
            <span className="mono muted agent-picker-id" title={a.node_id}>
              {a.node_id.slice(0, 12)}
            </span>
          </li>
        ))}
      </ul>
      {matches.length > shown.length ? (
        <small className="muted">{matches.length - shown.length} more — narrow the filter to see them.</small>
      ) : null}
      <small className="field-hint muted">
        {selected.size === 0 ? "none picked" : `${selected.size} picked`}; the secret is sent to these agents, or to any
        agent carrying every tag below. Neither: any approved agent.
      </small>
    </fieldset>
  );
}
