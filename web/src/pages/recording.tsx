/**
 * One session's recording (/sessions/:sessionId?speed=): what it was, the transcript played in the
 * page, a download of the file, and whether the bytes downloaded hash to the SHA-256 the terminal
 * service stored when it sealed the transcript. A session that failed (its agent disconnected)
 * plays up to where it stopped.
 */
import { useEffect, useMemo, useState } from "react";
import { Link, useParams } from "wouter";
import { useSession } from "../api/session";
import { transcriptDownloadUrl, useTerminalSession, useTranscript } from "../api/terminal";
import { stateOfSession, statusText } from "../lib/terminal-socket";
import { useUrlState } from "../lib/url-state";
import { Badge, Field, Page, ProblemMessage, QueryStatus, Section, Time, toneOf } from "../ui";
import "./pages.css";
import { RecordingPlayer, SPEEDS } from "./terminal/player";
import { type ChecksumStatus, checksumStatus, sha256Hex } from "./terminal/sha256";
import "./terminal/terminal.css";

export default function RecordingPage() {
  const { sessionId = "" } = useParams<{ sessionId: string }>();
  const { operator: me } = useSession();
  const [params, setParams] = useUrlState();
  const speedParam = Number(params.get("speed") ?? "1");
  const speed = (SPEEDS as readonly number[]).includes(speedParam) ? speedParam : 1;
  const session = useTerminalSession(sessionId, { poll: true });
  const s = session.data;
  const sealed = s ? s.closed_at !== null : false;
  const transcript = useTranscript(sessionId, sealed);
  const text = useMemo(
    () => (transcript.data ? new TextDecoder().decode(transcript.data.bytes) : undefined),
    [transcript.data],
  );
  const live = s?.status === "open" || s?.status === "opening";

  return (
    <Page title={s ? `Session ${s.node_name}` : "Session"}>
      <QueryStatus query={session}>
        {s ? (
          <>
            <dl className="props card">
              <dt>Session</dt>
              <dd className="mono">{s.session_id}</dd>
              <dt>Agent</dt>
              <dd>
                <Link href={`/agents/${encodeURIComponent(s.node_id)}`}>{s.node_name}</Link>
              </dd>
              <dt>Operator</dt>
              <dd>{s.operator_name}</dd>
              <dt>Status</dt>
              <dd>
                <Badge tone={live ? "ok" : toneOf(s.status)} title={s.close_reason ?? undefined}>
                  {live ? s.status : statusText(stateOfSession(s))}
                </Badge>
                {live && s.operator_id === me.id ? (
                  <>
                    {" "}
                    <Link href={`/terminal/${encodeURIComponent(s.session_id)}`}>Re-attach</Link>
                  </>
                ) : null}
              </dd>
              <dt>Shell</dt>
              <dd className="mono">
                {s.shell} ({s.cols}×{s.rows})
              </dd>
              <dt>Opened</dt>
              <dd>
                <Time value={s.opened_at * 1000} />
              </dd>
              <dt>Closed</dt>
              <dd>
                <Time value={s.closed_at === null ? null : s.closed_at * 1000} fallback="still open" />
              </dd>
              <dt>SHA-256</dt>
              <dd className="mono truncate" title={s.sha256 ?? undefined}>
                {s.sha256 ?? <span className="muted">none yet</span>}
              </dd>
            </dl>
            <Section
              title="Recording"
              actions={
                <a className="btn" href={transcriptDownloadUrl(s.session_id)} download={`${s.session_id}.cast`}>
                  Download
                </a>
              }
            >
              <div className="toolbar">
                <Field label="Speed">
                  <select
                    value={String(speed)}
                    onChange={(e) => setParams({ speed: e.target.value === "1" ? undefined : e.target.value })}
                  >
                    {SPEEDS.map((v) => (
                      <option key={v} value={v}>
                        {v}×
                      </option>
                    ))}
                  </select>
                </Field>
                {transcript.data ? <ChecksumLine bytes={transcript.data.bytes} expected={s.sha256} /> : null}
              </div>
              {live ? (
                <p className="muted">The session is still running: this plays what was recorded so far.</p>
              ) : null}
              <QueryStatus query={transcript}>
                {text !== undefined ? <RecordingPlayer text={text} speed={speed} /> : null}
              </QueryStatus>
            </Section>
          </>
        ) : null}
      </QueryStatus>
    </Page>
  );
}

function ChecksumLine({ bytes, expected }: { bytes: ArrayBuffer; expected: string | null }) {
  const [status, setStatus] = useState<ChecksumStatus>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let cancelled = false;
    setStatus(undefined);
    sha256Hex(bytes).then(
      (hex) => !cancelled && setStatus(checksumStatus(hex, expected)),
      (err: unknown) => !cancelled && setError(err),
    );
    return () => {
      cancelled = true;
    };
  }, [bytes, expected]);
  if (error) return <ProblemMessage error={error} />;
  const tone = status === "SHA-256 matches" ? "ok" : status === "SHA-256 does not match" ? "danger" : "neutral";
  return (
    <p className="checksum" aria-live="polite">
      <Badge tone={tone}>
        <span data-testid="sha256-status">{status ?? "checking…"}</span>
      </Badge>
    </p>
  );
}
