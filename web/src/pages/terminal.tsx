/**
 * A shell on an agent in the browser. /agents/:nodeId/terminal opens a session at the size the
 * terminal fits in and replaces the URL with /terminal/:sessionId; that URL (a reload, a bookmark)
 * attaches with a new ticket, so the same session comes back. xterm.js is imported here only: this
 * page is loaded lazily.
 */
import { useQueryClient } from "@tanstack/react-query";
import { type ReactNode, useEffect, useRef, useState } from "react";
import { Link, useLocation, useParams, useSearch } from "wouter";
import { isStatus } from "../api/client";
import { issueTicket, openTerminal, terminalKeys, useCloseSession, useTerminalSession } from "../api/terminal";
import { isFinished, type TerminalState, TerminalSocket, stateOfSession, statusText } from "../lib/terminal-socket";
import { Banner, Page, ProblemMessage } from "../ui";
import "./pages.css";
import { handOff, takeHandOff } from "./terminal/handoff";
import "./terminal/terminal.css";
import { useXterm } from "./terminal/use-xterm";

export default function TerminalPage() {
  const { nodeId, sessionId } = useParams<{ nodeId?: string; sessionId?: string }>();
  if (sessionId) return <AttachedTerminal key={sessionId} sessionId={sessionId} />;
  return <OpeningTerminal key={nodeId} nodeId={nodeId ?? ""} />;
}

function OpeningTerminal({ nodeId }: { nodeId: string }) {
  const [, navigate] = useLocation();
  // ?request=<id>: open with the pass of my executed terminal.open change request.
  const request = new URLSearchParams(useSearch()).get("request") ?? undefined;
  const screen = useRef<HTMLDivElement>(null);
  const term = useXterm(screen);
  const [problem, setProblem] = useState<unknown>();
  const [held, setHeld] = useState<string>();
  const started = useRef(false);
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  useEffect(() => {
    // Once per visit: opening spawns a shell (and a recording) on the agent.
    if (!term || started.current) return;
    started.current = true;
    openTerminal(nodeId, { cols: term.cols, rows: term.rows }, request).then(
      (opened) => {
        // An approval policy holds it: nothing was opened; the request waits for approvers.
        if ("change_request_id" in opened) return mounted.current && setHeld(opened.change_request_id);
        handOff(opened.session_id, opened.ws_url);
        if (mounted.current) navigate(`/terminal/${encodeURIComponent(opened.session_id)}`, { replace: true });
      },
      (err: unknown) => mounted.current && setProblem(err),
    );
  }, [term, nodeId, navigate, request]);

  return (
    <Page title="Terminal">
      <StatusLine text={problem ? "could not open" : held ? "held for approval" : "connecting"} />
      {problem ? <ProblemMessage error={problem} /> : null}
      {held ? (
        <Banner kind="info" testId="terminal-held">
          An approval policy holds terminals on this agent: change request{" "}
          <Link href={`/requests/${encodeURIComponent(held)}`}>{held}</Link> waits for approval. Once approved, open the
          terminal from the request.
        </Banner>
      ) : null}
      <p>
        <Link href={`/agents/${encodeURIComponent(nodeId)}`}>Back to the agent</Link>
      </p>
      <div className="terminal-screen" data-testid="terminal" ref={screen} />
    </Page>
  );
}

function AttachedTerminal({ sessionId }: { sessionId: string }) {
  const qc = useQueryClient();
  const session = useTerminalSession(sessionId);
  const close = useCloseSession();
  const screen = useRef<HTMLDivElement>(null);
  const term = useXterm(screen);
  const [state, setState] = useState<TerminalState>({ kind: "connecting" });
  const [problem, setProblem] = useState<unknown>();
  // The session had ended before we could attach: its state comes from the API, not a socket.
  const [ended, setEnded] = useState(false);
  const [attempt, setAttempt] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` re-runs the attach (Re-attach).
  useEffect(() => {
    if (!term) return;
    let socket: TerminalSocket | undefined;
    let cancelled = false;
    setState({ kind: "connecting" });
    setProblem(undefined);
    term.options.disableStdin = false;
    const refresh = () => qc.invalidateQueries({ queryKey: terminalKeys.detail(sessionId) });

    const attach = async () => {
      let url = takeHandOff(sessionId);
      if (!url) {
        try {
          url = (await issueTicket(sessionId)).ws_url;
        } catch (err) {
          if (cancelled) return;
          if (isStatus(err, 409)) setEnded(true);
          else {
            setProblem(err);
            setState({ kind: "failed", reason: "could not attach", reattach: true });
          }
          void refresh();
          return;
        }
      }
      if (cancelled) return;
      socket = new TerminalSocket(url, {
        onData: (bytes) => term.write(bytes),
        onState: (s) => {
          setState(s);
          if (isFinished(s)) {
            term.options.disableStdin = true;
            void refresh();
          }
        },
      });
      socket.resize(term.cols, term.rows);
      term.focus();
    };
    void attach();

    const input = term.onData((d) => socket?.write(d));
    const binary = term.onBinary((d) => socket?.write(Uint8Array.from(d, (c) => c.charCodeAt(0))));
    const resize = term.onResize(({ cols, rows }) => socket?.resize(cols, rows));
    return () => {
      cancelled = true;
      input.dispose();
      binary.dispose();
      resize.dispose();
      socket?.detach();
    };
  }, [term, sessionId, attempt, qc]);

  const s = session.data;
  const shown: TerminalState = ended && s ? stateOfSession(s) : state;
  const finished = isFinished(shown);

  return (
    <Page
      title={s ? `Terminal ${s.node_name}` : "Terminal"}
      actions={
        shown.kind === "open" ? (
          <button
            type="button"
            className="btn btn-danger"
            disabled={close.isPending}
            onClick={() => close.mutate(sessionId)}
          >
            End session
          </button>
        ) : null
      }
    >
      <StatusLine text={ended && !s ? "closed" : statusText(shown)}>
        {s ? (
          <span className="muted">
            {" "}
            · {s.shell} on{" "}
            <Link href={`/agents/${encodeURIComponent(s.node_id)}`} className="mono">
              {s.node_name}
            </Link>
          </span>
        ) : null}
        {shown.kind === "failed" && shown.reattach ? (
          <button type="button" className="btn btn-small" onClick={() => setAttempt((n) => n + 1)}>
            Re-attach
          </button>
        ) : null}
        {finished ? <Link href={`/sessions/${encodeURIComponent(sessionId)}`}>Play the recording</Link> : null}
      </StatusLine>
      <ProblemMessage error={problem ?? close.error ?? session.error} />
      <div className="terminal-screen" data-testid="terminal" ref={screen} />
      <p className="muted terminal-hint">
        Selecting text copies it; paste with Ctrl+Shift+V or a right-click. Leaving this page keeps the session running
        for a while: come back to this address to re-attach.
        {s && !finished ? (
          <span data-testid="terminal-idle">
            {" "}
            The session closes after {idleText(s.idle_timeout_seconds)} without input or output.
          </span>
        ) : null}
      </p>
    </Page>
  );
}

function StatusLine({ text, children }: { text: string; children?: ReactNode }) {
  return (
    <p className="terminal-status" role="status">
      <span className="terminal-status-label">Status:</span> <strong data-testid="terminal-status">{text}</strong>
      {children}
    </p>
  );
}

/** "15 min", "90 s": the terminal service's idle timeout as the page states it. */
function idleText(seconds: number): string {
  return seconds >= 60 && seconds % 60 === 0 ? `${seconds / 60} min` : `${seconds} s`;
}
