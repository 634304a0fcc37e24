/**
 * Core-NATS subjects of assignment-run progress (RunProgress in proto/orch/v1/state.proto). The
 * state service publishes, the gateway's run streams subscribe; both build the subject here.
 * Two tokens below `orch.state`, so no RPC subject (`orch.state.<Method>`) can collide with it
 * and a gateway allowed to request `orch.state.*` still cannot publish progress.
 */
export const RUN_PROGRESS_SUBJECTS = "orch.state.runs.*";

export const runProgressSubject = (runId: string): string => `orch.state.runs.${runId}`;
