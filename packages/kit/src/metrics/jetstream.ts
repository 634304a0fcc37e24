import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { Registry } from "prom-client";
import type { NatsConnection } from "../nats.js";
import { metric } from "./names.js";

/** A scrape must not hang on an absent JetStream; the gauges then keep their last value. */
const INFO_TIMEOUT_MS = 2000;

interface Sample {
  pending: number;
  redelivered: number;
}
type Sampler = () => Promise<Sample | undefined>;

/** Per registry, the consumers its gauges report (a process may watch several). */
const watched = new WeakMap<Registry, Map<string, { stream: string; consumer: string; sample: Sampler }>>();

/**
 * orch_consumer_pending (not yet delivered + delivered and not yet acknowledged) and
 * orch_consumer_redelivered for a durable consumer, read from its consumer info at scrape time
 * (one info request per consumer per scrape, shared by both gauges). Registering the same
 * consumer again replaces it.
 */
export function registerConsumerMetrics(
  registry: Registry,
  nc: NatsConnection,
  consumer: { stream: string; durable: string },
): void {
  let consumers = watched.get(registry);
  if (!consumers) {
    const all = new Map<string, { stream: string; consumer: string; sample: Sampler }>();
    consumers = all;
    watched.set(registry, all);
    const each = async (set: (labels: { stream: string; consumer: string }, s: Sample) => void) => {
      await Promise.all(
        [...all.values()].map(async ({ stream, consumer, sample }) => {
          const s = await sample();
          if (s) set({ stream, consumer }, s);
        }),
      );
    };
    metric(registry, "orch_consumer_pending", {
      collect() {
        return each((labels, s) => this.set(labels, s.pending));
      },
    });
    metric(registry, "orch_consumer_redelivered", {
      collect() {
        return each((labels, s) => this.set(labels, s.redelivered));
      },
    });
  }
  consumers.set(`${consumer.stream}/${consumer.durable}`, {
    stream: consumer.stream,
    consumer: consumer.durable,
    sample: consumerSampler(nc, consumer),
  });
}

function consumerSampler(nc: NatsConnection, consumer: { stream: string; durable: string }): Sampler {
  let jsm: Promise<JetStreamManager> | undefined;
  let inflight: Promise<Sample | undefined> | undefined;
  return () => {
    inflight ??= (async () => {
      jsm ??= jetstreamManager(nc, { timeout: INFO_TIMEOUT_MS }).catch((err) => {
        jsm = undefined;
        throw err;
      });
      const info = await (await jsm).consumers.info(consumer.stream, consumer.durable);
      return { pending: info.num_pending + info.num_ack_pending, redelivered: info.num_redelivered };
    })()
      .catch(() => undefined)
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
}
