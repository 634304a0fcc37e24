import { StringDecoder } from "node:string_decoder";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Clock } from "@orch/kit";
import { parseControl, termSubject } from "./control.js";
import { outputLine, resizeLine, type TranscriptWriter } from "./transcript.js";

export interface RecorderHooks {
  /** The agent reported the shell's end. */
  exit(code: number, signal: number, reason: string): void;
  /** Someone asked for the session to close (DELETE on any replica). */
  closeRequested(): void;
}

export interface Recorder {
  readonly sessionId: string;
  /** Last output or heartbeat from the agent, ms. */
  lastAgentAt(): number;
  /** Last input or output, ms (idle timeout). */
  lastActivityAt(): number;
  writer: TranscriptWriter;
  /** Unsubscribes and closes the file (flushed and synced). */
  stop(): Promise<void>;
}

/**
 * Records one session: output (`.out`) becomes asciicast "o" events, resizes (`.ctl`) "r" events.
 * Input (`.in`) only counts as activity and is never written: what an operator types at a
 * password prompt (echo off) must not end up in a file. Subscribes before the PTY exists, so the
 * first byte is recorded.
 */
export async function startRecorder(opts: {
  nc: NatsConnection;
  sessionId: string;
  openedAtMs: number;
  writer: TranscriptWriter;
  clock: Clock;
  hooks: RecorderHooks;
}): Promise<Recorder> {
  const { nc, sessionId, writer, clock, hooks } = opts;
  const decoder = new StringDecoder("utf8");
  // Whether the decoder holds the start of a UTF-8 character split across messages (were
  // `lastNeed` ever missing, every chunk would simply take the decoder).
  const decoderHolds = () => (decoder as unknown as { lastNeed?: number }).lastNeed !== 0;
  let lastAgent = clock.now();
  let lastActivity = clock.now();
  const elapsed = () => clock.now() - opts.openedAtMs;
  const subs: Subscription[] = [
    nc.subscribe(termSubject(sessionId, "out"), {
      callback: (err, msg) => {
        if (err) return;
        lastAgent = lastActivity = clock.now();
        const at = elapsed();
        if (!decoderHolds() && writer.output(at, msg.data)) return;
        const text = decoder.write(Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength));
        if (text) writer.append(outputLine(at, text));
      },
    }),
    nc.subscribe(termSubject(sessionId, "in"), {
      callback: (err) => {
        if (!err) lastActivity = clock.now();
      },
    }),
    nc.subscribe(termSubject(sessionId, "ctl"), {
      callback: (err, msg) => {
        if (err) return;
        const m = parseControl(msg.data);
        if (!m) return;
        switch (m.type) {
          case "heartbeat":
            lastAgent = clock.now();
            break;
          case "resize":
            lastActivity = clock.now();
            writer.append(resizeLine(elapsed(), m.cols, m.rows));
            break;
          case "exit": {
            lastAgent = clock.now();
            const rest = decoder.end();
            if (rest) writer.append(outputLine(elapsed(), rest));
            hooks.exit(m.code, m.signal, m.reason);
            break;
          }
          case "close":
            hooks.closeRequested();
            break;
          default:
            break;
        }
      },
    }),
  ];
  // The subscriptions must be live on the server before the agent is asked for a PTY.
  await nc.flush();
  let stopped = false;
  return {
    sessionId,
    writer,
    lastAgentAt: () => lastAgent,
    lastActivityAt: () => lastActivity,
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const s of subs) s.unsubscribe();
      await writer.close();
    },
  };
}
