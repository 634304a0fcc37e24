/**
 * Terminal sessions (docs/terminal.md): open one on an agent, get a fresh attach URL for a live one,
 * list and read them, and fetch their transcripts. The WebSocket URL always comes from the API
 * (`ws_url`, a single-use ticket); the cookie session authorises these calls and the gateway binds
 * the ticket to it.
 */
import type { OpenedTerminal, ResponseBody, TerminalSession } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export type { OpenedTerminal, TerminalSession };
export type TerminalSummary = ResponseBody<"/api/v1/terminal", "get">[number];
export type SessionStatus = TerminalSummary["status"];
export const SESSION_STATUSES: SessionStatus[] = ["opening", "open", "closed", "failed"];

export const SESSIONS_PAGE_SIZE = 50;
const KEY = ["terminal"] as const;
export const terminalKeys = {
  list: (status: string, cursor: string | undefined) => [...KEY, "list", { status, cursor }] as const,
  detail: (id: string) => [...KEY, "session", id] as const,
  transcript: (id: string) => [...KEY, "session", id, "transcript"] as const,
};

/**
 * Opens a shell on the agent (node id or name) at the terminal's current size; `changeRequestId`:
 * with the one-time pass of my executed terminal.open request. A policy holding the open answers
 * `{status: "held", change_request_id}` instead (docs/approvals.md).
 */
export async function openTerminal(
  nodeId: string,
  size: { cols: number; rows: number },
  changeRequestId?: string,
): Promise<OpenedTerminal> {
  const query = {
    cols: size.cols,
    rows: size.rows,
    ...(changeRequestId ? { change_request_id: changeRequestId } : {}),
  };
  return unwrap(await api.POST("/api/v1/terminal/{node_id}", { params: { path: { node_id: nodeId }, query } }));
}

/** A new single-use attach URL for a live session of mine (a reload, a dropped connection). */
export async function issueTicket(sessionId: string): Promise<{ session_id: string; ws_url: string }> {
  return unwrap(
    await api.POST("/api/v1/terminal/session/{session_id}/ticket", { params: { path: { session_id: sessionId } } }),
  );
}

export interface SessionList {
  sessions: TerminalSummary[];
  nextCursor: string | undefined;
}

export function useTerminalSessions(status: string, cursor: string | undefined) {
  return useQuery({
    queryKey: terminalKeys.list(status, cursor),
    queryFn: async ({ signal }): Promise<SessionList> => {
      const r = await api.GET("/api/v1/terminal", {
        params: {
          query: {
            limit: SESSIONS_PAGE_SIZE,
            ...(cursor ? { cursor } : {}),
            ...(status ? { status: status as SessionStatus } : {}),
          },
        },
        signal,
      });
      const sessions = unwrap(r);
      return { sessions, nextCursor: r.response.headers.get("x-next-cursor") ?? undefined };
    },
    placeholderData: keepPreviousData,
    // Live sessions end by themselves; the list follows without a reload.
    refetchInterval: 10_000,
  });
}

export function useTerminalSession(sessionId: string, opts: { poll?: boolean } = {}) {
  return useQuery({
    queryKey: terminalKeys.detail(sessionId),
    queryFn: async ({ signal }) =>
      unwrap(
        await api.GET("/api/v1/terminal/session/{session_id}", {
          params: { path: { session_id: sessionId } },
          signal,
        }),
      ),
    refetchInterval: (q) => (opts.poll && q.state.data?.closed_at == null ? 5_000 : false),
  });
}

/** Ends the shell and seals the transcript. */
export function useCloseSession() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (sessionId: string) =>
      unwrap(
        await api.DELETE("/api/v1/terminal/session/{session_id}", { params: { path: { session_id: sessionId } } }),
      ),
    onSettled: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

export interface Transcript {
  /** The file exactly as served (the SHA-256 is over these bytes). */
  bytes: ArrayBuffer;
  /** `X-Transcript-SHA256`: present once the session ended and the file was sealed. */
  headerSha256: string | undefined;
}

/** The asciicast v2 file; `sealed` re-fetches once the session ended (a live one keeps growing). */
export function useTranscript(sessionId: string, sealed: boolean) {
  return useQuery({
    queryKey: [...terminalKeys.transcript(sessionId), { sealed }],
    queryFn: async ({ signal }): Promise<Transcript> => {
      const r = await api.GET("/api/v1/terminal/session/{session_id}/transcript", {
        params: { path: { session_id: sessionId } },
        parseAs: "arrayBuffer",
        signal,
      });
      if (!r.response.ok) unwrap(r);
      if (!(r.data instanceof ArrayBuffer)) throw new Error("the gateway sent no transcript");
      return { bytes: r.data, headerSha256: r.response.headers.get("x-transcript-sha256") ?? undefined };
    },
    staleTime: Number.POSITIVE_INFINITY,
  });
}

/** Where "Download" points: the same route, which answers with content-disposition: attachment. */
export function transcriptDownloadUrl(sessionId: string): string {
  return `/api/v1/terminal/session/${encodeURIComponent(sessionId)}/transcript`;
}
