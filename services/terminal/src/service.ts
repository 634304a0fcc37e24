import { TerminalService } from "@orch/contracts";
import { metric, serveRpc, type Service } from "@orch/kit";
import { accessHandlers } from "./handlers/access.js";
import { terminalApprovals } from "./approvals/gate.js";
import { openHandlers } from "./handlers/open.js";
import { passHandlers } from "./handlers/passes.js";
import { sessionHandlers } from "./handlers/sessions.js";
import { transcriptHandlers } from "./handlers/transcript.js";
import type { TerminalDeps } from "./deps.js";
import { createRecordings, type Recordings } from "./recordings.js";

export type TerminalServiceHandle = Service & { recordings: Recordings };

/** `approvals`: four-eyes approval of opens (the auth service's policies unless a test stands in). */
export async function createTerminalService(deps: TerminalDeps, approvals = terminalApprovals(deps)) {
  // A fresh identity per process: a restarted replica must not mistake its predecessor's leases for its own.
  const recordings = createRecordings(deps, `${deps.ids.next()}`);
  // Sessions abandoned by a previous run are settled (or resumed) before new work arrives.
  await recordings
    .sweep()
    .catch((err) => deps.log.warn({ err: (err as Error).message }, "initial terminal sweep failed"));
  // Sessions this replica records are the ones open on it (adopted ones included).
  metric(deps.metrics, "orch_terminal_sessions_open", {
    collect() {
      this.set(recordings.owned().length);
    },
  });
  const rpc = serveRpc({
    nc: deps.nc,
    idempotency: deps.idempotency,
    name: "terminal",
    service: TerminalService,
    log: deps.log,
    handlers: {
      ...openHandlers(deps, recordings, approvals),
      ...passHandlers(deps, approvals),
      ...sessionHandlers(deps, recordings),
      ...accessHandlers(deps, recordings),
      ...transcriptHandlers(deps, recordings),
    },
  });
  return {
    recordings,
    async stop() {
      await rpc.stop();
      await recordings.stop();
    },
  } satisfies TerminalServiceHandle;
}
