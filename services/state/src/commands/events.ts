import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  commandRunSubject,
  CommandRunEventSchema,
  type CommandOutputSchema,
  type CommandRunSchema,
  type CommandTargetSchema,
} from "@orch/contracts";
import type { NatsConnection } from "@orch/kit";

/**
 * CommandRunEvent on `orch.state.commands.<run_id>` (core NATS, best effort): the gateway's run
 * streams follow them and re-read the run for anything they missed.
 */
export function runEvents(nc: NatsConnection, runId: string) {
  const subject = commandRunSubject(runId);
  const send = (event: MessageInitShape<typeof CommandRunEventSchema>["event"]) =>
    nc.publish(subject, toBinary(CommandRunEventSchema, create(CommandRunEventSchema, { runId, event })));
  return {
    output: (value: MessageInitShape<typeof CommandOutputSchema>) => send({ case: "output", value }),
    /** Without output bytes: those are read from the run. */
    target: (value: MessageInitShape<typeof CommandTargetSchema>) =>
      send({ case: "target", value: { ...value, stdout: new Uint8Array(), stderr: new Uint8Array() } }),
    /** Without targets. */
    run: (value: MessageInitShape<typeof CommandRunSchema>) => send({ case: "run", value: { ...value, targets: [] } }),
  };
}
export type RunEvents = ReturnType<typeof runEvents>;
