import type { LiveState } from "../../api/sse";

const TEXT: Record<LiveState, string> = {
  connecting: "Connecting…",
  live: "Receiving new events",
  retrying: "Reconnecting…",
  stopped: "Stopped",
};

/** Where the live tail stands, in words (the dot's colour only repeats it). */
export function LiveIndicator({ state, detail }: { state: LiveState; detail: string | undefined }) {
  return (
    <span className="live-indicator" role="status" data-testid="live-indicator" data-state={state}>
      <span className={`live-dot is-${state}`} aria-hidden="true" />
      {TEXT[state]}
      {detail ? <span className="muted"> ({detail})</span> : null}
    </span>
  );
}
