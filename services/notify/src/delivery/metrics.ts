import { bounded, metric, type MetricsRegistry } from "@orch/kit";
import { CHANNEL_TYPES } from "../channels/config.js";

/** What one delivery attempt came to: sent, to be retried, given up, refused by the address policy, or 410 Gone. */
export type DeliveryResult = "delivered" | "retry" | "failed" | "refused" | "gone";

/** orch_deliveries_total by channel type (closed set) and result; created up front so /metrics lists it at once. */
export function deliveryCounter(registry: MetricsRegistry) {
  const deliveries = metric(registry, "orch_deliveries_total");
  return (channelType: string, result: DeliveryResult) =>
    deliveries.inc({ channel_type: bounded(channelType, CHANNEL_TYPES), result });
}
