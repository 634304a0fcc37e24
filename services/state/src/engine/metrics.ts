import { bounded, metric, type MetricsRegistry } from "@orch/kit";
import type { OperationKind, OperationRow, OperationStatus } from "../db/operations.js";

const KINDS: readonly OperationKind[] = ["apply", "plan", "drift"];
const RESULTS: readonly OperationStatus[] = ["succeeded", "failed", "timed_out", "unreachable"];

/** Counts an operation that just ended (once: finishOperation's first writer), and a drift check that found drift. */
export function recordOperationEnd(registry: MetricsRegistry, row: OperationRow, drifted: boolean): void {
  metric(registry, "orch_operations_total").inc({
    kind: bounded(row.kind, KINDS),
    result: bounded(row.status, RESULTS),
  });
  if (drifted) metric(registry, "orch_drift_detected_total").inc();
}

/** Registers the state metrics up front so /metrics lists them before the first operation ends. */
export function registerStateMetrics(registry: MetricsRegistry): void {
  metric(registry, "orch_operations_total");
  metric(registry, "orch_drift_detected_total");
  metric(registry, "orch_blob_bytes_sent_total");
}
