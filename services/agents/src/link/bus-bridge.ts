import type { MessageInitShape } from "@bufbuild/protobuf";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { AGENT_PUBLISH_ALLOWED, AGENT_SUBSCRIBE_ALLOWED, type BusMessage, type ServerFrameSchema } from "@orch/contracts";
import type { Logger } from "@orch/kit";

const allowed = (list: RegExp[], subject: string) => list.some((re) => re.test(subject));

export interface BusBridge {
  publish(m: BusMessage): void;
  subscribe(subject: string): void;
  unsubscribe(subject: string): void;
  /** Drops every subscription the agent made. */
  stop(): void;
}

/**
 * Lets an agent publish and subscribe on the bus through its link, only on the subjects the
 * contracts allow (terminal streams, state progress): an agent never sees or forges anything else.
 */
export function createBusBridge(opts: { nc: NatsConnection; send(frame: MessageInitShape<typeof ServerFrameSchema>): void; log: Logger; maxSubscriptions?: number }): BusBridge {
  const subs = new Map<string, Subscription>();
  const max = opts.maxSubscriptions ?? 256;
  return {
    publish(m) {
      if (!allowed(AGENT_PUBLISH_ALLOWED, m.subject)) {
        opts.log.warn({ subject: m.subject }, "agent publish refused: subject not allowed");
        return;
      }
      opts.nc.publish(m.subject, m.data);
    },
    subscribe(subject) {
      if (!allowed(AGENT_SUBSCRIBE_ALLOWED, subject)) {
        opts.log.warn({ subject }, "agent subscribe refused: subject not allowed");
        return;
      }
      if (subs.has(subject)) return;
      if (subs.size >= max) {
        opts.log.warn({ subject, max }, "agent subscribe refused: too many subscriptions");
        return;
      }
      subs.set(
        subject,
        opts.nc.subscribe(subject, {
          callback: (err, msg) => {
            if (!err) opts.send({ frame: { case: "message", value: { subject: msg.subject, data: msg.data } } });
          },
        }),
      );
    },
    unsubscribe(subject) {
      subs.get(subject)?.unsubscribe();
      subs.delete(subject);
    },
    stop() {
      for (const s of subs.values()) s.unsubscribe();
      subs.clear();
    },
  };
}
