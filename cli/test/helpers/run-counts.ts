/** A command run's per-status counts as the API sends them: every status 0 unless given. */
export const runCounts = (o: Record<string, number>) => ({
  queued: 0,
  running: 0,
  succeeded: 0,
  failed: 0,
  timed_out: 0,
  cancelled: 0,
  unreachable: 0,
  lost: 0,
  not_approved: 0,
  not_found: 0,
  not_started: 0,
  ...o,
});
