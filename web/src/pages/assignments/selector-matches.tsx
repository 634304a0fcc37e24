/**
 * How many agents a selector matches now, asked ~250 ms after typing stops and only for a selector
 * that parses (the count of approved agents: the ones an apply reaches).
 */
import { useAgentSummary } from "../../api/agents";
import { ProblemMessage } from "../../ui";
import { matchesText } from "./form-rules";
import { useDebounced } from "./use-debounced";

const DEBOUNCE_MS = 250;

export function SelectorMatches({ selector }: { selector: string | undefined }) {
  const settled = useDebounced(selector, DEBOUNCE_MS);
  // A stale count for an older text would mislead: show nothing until the typed text has settled.
  const current = settled !== undefined && settled === selector;
  const summary = useAgentSummary(settled ?? "", { enabled: settled !== undefined });
  const s = current ? summary.data : undefined;
  return (
    <div className="selector-matches" aria-live="polite">
      {s && !summary.isPlaceholderData ? (
        <>
          <span data-testid="selector-matches">{matchesText(s.approved)}</span>
          <span className="muted">
            {" "}
            ({s.connected} connected{s.pending ? `, ${s.pending} pending not counted` : ""})
          </span>
        </>
      ) : selector !== undefined ? (
        <span className="muted">counting…</span>
      ) : null}
      {current && summary.error ? <ProblemMessage error={summary.error} /> : null}
    </div>
  );
}
