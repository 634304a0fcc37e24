/**
 * The audit live tail over SSE (lib/event-stream.ts does the reconnecting). EventSource cannot tell
 * us the status of a refused connection, so after a failure we ask GET /auth/whoami through the
 * shared client: a 401 there sends the operator to sign in and a 5xx raises the gateway banner,
 * exactly as for any other request.
 */
import { useEffect, useRef, useState } from "react";
import type { AuditFilters } from "../lib/audit-query";
import { streamQuery } from "../lib/audit-query";
import { type LiveState, openStream } from "../lib/event-stream";
import { api } from "./client";

export type { LiveState };

const probeSession = () => api.GET("/api/v1/auth/whoami");

/**
 * Live audit events for the filters while `enabled`; `onEvent` gets each parsed event. Stops on
 * unmount, when disabled, and reopens when the filters change.
 */
export function useAuditStream<E extends { id: string }>(
  filters: AuditFilters,
  enabled: boolean,
  onEvent: (event: E) => void,
  startAfter: string | undefined,
): { state: LiveState; detail: string | undefined } {
  const [status, setStatus] = useState<{ state: LiveState; detail: string | undefined }>({
    state: "stopped",
    detail: undefined,
  });
  const handler = useRef(onEvent);
  handler.current = onEvent;
  const start = useRef(startAfter);
  start.current = startAfter;
  const query = streamQuery(filters);

  useEffect(() => {
    if (!enabled) return;
    const stop = openStream({
      url: (lastId) => {
        const q = new URLSearchParams(query);
        if (lastId) q.set("cursor", lastId);
        const s = q.toString();
        return `/api/v1/audit/stream${s ? `?${s}` : ""}`;
      },
      event: "audit",
      startAfter: start.current,
      onMessage: (data) => {
        try {
          handler.current(JSON.parse(data) as E);
        } catch {
          // A malformed event is skipped; the next one still arrives.
        }
      },
      onState: (state, detail) => setStatus({ state, detail }),
      probe: probeSession,
    });
    return stop;
  }, [enabled, query]);

  return enabled ? status : { state: "stopped", detail: undefined };
}
