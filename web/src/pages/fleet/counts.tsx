import type { AgentSummary } from "../../api/agents";

const TILES = [
  { key: "connected", label: "Connected" },
  { key: "disconnected", label: "Disconnected" },
  { key: "pending", label: "Pending" },
  { key: "total", label: "Total" },
] as const;

/** The fleet's counts for the current selector; each number alone in its element (tests read it). */
export function Counts({ summary }: { summary: AgentSummary | undefined }) {
  return (
    <dl className="counts" aria-label="Agent counts">
      {TILES.map((t) => (
        <div key={t.key} className={`count count-${t.key}`}>
          <dt>{t.label}</dt>
          <dd data-testid={`count-${t.key}`}>{summary ? String(summary[t.key]) : "–"}</dd>
        </div>
      ))}
    </dl>
  );
}
