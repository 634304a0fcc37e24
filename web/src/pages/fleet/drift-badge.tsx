/**
 * One agent's drift in a word: in sync, drifted (n) or unknown (never checked, or not known yet).
 * The API has no drift in its agents list, so each row asks for its agent's latest record; the fleet
 * table is virtualised, so that is one request per row on screen, never one per agent of the fleet.
 */
import { useLatestDrift } from "../../api/state";
import { driftSummary } from "../../lib/agent-format";
import { Badge } from "../../ui";

export function DriftBadge({ nodeId }: { nodeId: string }) {
  const drift = useLatestDrift(nodeId);
  const d = driftSummary(drift.data);
  return (
    <Badge
      tone={d.tone}
      title={
        drift.data === null
          ? "No drift check has run yet"
          : drift.error
            ? "The drift record could not be read"
            : undefined
      }
    >
      {d.text}
    </Badge>
  );
}
