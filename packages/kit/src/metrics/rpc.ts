import type { Msg } from "@nats-io/transport-node";
import type { Registry } from "prom-client";
import { isCode } from "../errors.js";
import { busError } from "../nats.js";
import { H } from "../rpc.js";
import type { RpcObserver } from "../rpc-observers.js";
import { metric } from "./names.js";

/** A request that never got a reply, named by what the bus said. */
function failureCode(err: unknown): string {
  switch (busError(err).reason) {
    case "timeout":
      return "timeout";
    case "service_unavailable":
      return "no_responders";
    default:
      return "bus_error";
  }
}

/** The error-code header of a reply: "ok" when absent, a catalogue code, else "other". */
function replyCode(msg: Msg): string {
  const code = msg.headers?.get(H.error);
  if (!code) return "ok";
  return isCode(code) ? code : "other";
}

/**
 * RED metrics for every bus RPC the process serves or sends: one duration histogram per side,
 * labelled by service, method and outcome (its count is the rate, code != "ok" the errors).
 */
export function rpcMetricsObserver(registry: Registry, now: () => number = performance.now.bind(performance)) {
  const server = metric(registry, "orch_rpc_server_duration_seconds");
  const client = metric(registry, "orch_rpc_client_duration_seconds");
  const observer: RpcObserver = {
    async server(info, _headers, handle) {
      const start = now();
      let code = "INTERNAL";
      try {
        const answered = await handle();
        code = answered === "" ? "ok" : isCode(answered) ? answered : "other";
        return answered;
      } finally {
        server.observe({ rpc_service: info.service, rpc_method: info.method, code }, (now() - start) / 1000);
      }
    },
    async client(info, _headers, send) {
      const start = now();
      const labels = { rpc_service: info.service, rpc_method: info.method };
      try {
        const reply = await send();
        client.observe({ ...labels, code: replyCode(reply) }, (now() - start) / 1000);
        return reply;
      } catch (err) {
        client.observe({ ...labels, code: failureCode(err) }, (now() - start) / 1000);
        throw err;
      }
    },
  };
  return observer;
}
