import type { ServerResponse } from "node:http";
import { runProgressSubject, type AssignmentRun, type StateService } from "@orch/contracts";
import type { CallOptions, Client, Logger, NatsConnection } from "@orch/kit";
import type { Credential, EndReason, LiveSessions } from "../live-sessions.js";
import { runJson } from "../routes/assignments.js";

/** How often a stream re-reads the run, covering progress messages lost in transit (core NATS). */
const POLL_MS = 5_000;
const HEARTBEAT_MS = 15_000;
/** A client this far behind is disconnected; it reconnects and gets the current snapshot. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

export interface RunStreamDeps {
  nc: NatsConnection;
  log: Logger;
  /** Open streams, so a gateway shutdown can end them. */
  registry: Set<RunStream>;
  state: Client<typeof StateService>;
  call: CallOptions;
  name: string;
  runId: string;
  res: ServerResponse;
}

export const isFinal = (r: Pick<AssignmentRun, "status">) => r.status !== "running";

/**
 * One run's live view: `event: run` with the whole run (RunOut) whenever it changed, then
 * `event: end` once its status is final. The progress subject is subscribed before the first read,
 * so a change between the snapshot and the subscription cannot be missed. A progress message only
 * says "read again": the view always comes from GetAssignmentRun (scoped to the caller), at most
 * one read in flight and one pending, so a burst of messages costs two reads. A reconnecting
 * client simply gets the current snapshot: the stream needs no event ids.
 */
export class RunStream {
  private phase: "opening" | "live" | "closed" = "opening";
  private last = "";
  private reading = false;
  private pending = false;
  private timers: NodeJS.Timeout[] = [];
  private readonly sub;
  private release: (() => void) | undefined;
  /** Set when the stream's credential ended (logout, the operator's removal, expiry). */
  endedBy: EndReason | undefined;

  constructor(private readonly d: RunStreamDeps) {
    d.registry.add(this);
    d.res.on("close", () => this.close());
    this.sub = d.nc.subscribe(runProgressSubject(d.runId), {
      callback: (err) => {
        if (err || this.phase === "closed") return;
        if (this.phase === "opening") this.pending = true;
        else this.refresh();
      },
    });
  }

  get closed() {
    return this.phase === "closed";
  }

  /** The first snapshot: errors (run_not_found, …) become problem+json before anything is sent. */
  async open(): Promise<AssignmentRun> {
    try {
      // The subscription must be in place at the server before the snapshot is read.
      await this.d.nc.flush();
      return await this.read();
    } catch (err) {
      this.close();
      throw err;
    }
  }

  run(first: AssignmentRun) {
    const { res } = this.d;
    if (res.destroyed) return this.close();
    this.write("retry: 2000\n\n");
    this.phase = "live";
    this.show(first);
    if (this.closed) return;
    this.timers.push(
      setInterval(() => this.refresh(), POLL_MS),
      setInterval(() => this.write(": heartbeat\n\n"), HEARTBEAT_MS),
    );
    if (this.pending) this.refresh();
  }

  private read() {
    return this.d.state.getAssignmentRun({ name: this.d.name, runId: this.d.runId }, this.d.call);
  }

  /** Reads the run again, or marks one more read when a read is in flight. */
  private refresh() {
    if (this.closed) return;
    if (this.reading) {
      this.pending = true;
      return;
    }
    this.reading = true;
    void (async () => {
      try {
        do {
          this.pending = false;
          try {
            this.show(await this.read());
          } catch (err) {
            this.d.log.debug({ err: (err as Error).message, run: this.d.runId }, "run stream read failed; retrying");
          }
        } while (this.pending && !this.closed);
      } finally {
        this.reading = false;
      }
    })();
  }

  private show(r: AssignmentRun) {
    if (this.closed) return;
    const data = JSON.stringify(runJson(r));
    if (data !== this.last) {
      this.last = data;
      this.write(`event: run\ndata: ${data}\n\n`);
    }
    if (isFinal(r)) {
      this.write(`event: end\ndata: ${JSON.stringify({ status: r.status })}\n\n`);
      this.close();
    }
  }

  private write(chunk: string) {
    const { res } = this.d;
    if (this.closed || res.destroyed) return;
    res.write(chunk);
    if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
  }

  /** Ends the stream with the credential that opened it; bound before anything is sent. */
  bindTo(live: LiveSessions, cred: Credential) {
    this.release = live.bind(cred, { kind: "run_stream", end: (reason) => this.end(reason) });
  }

  /** An `error` event names why, then the stream ends; a reconnecting client gets 401. */
  end(reason: EndReason) {
    if (this.closed) return;
    this.endedBy = reason;
    const data = { code: reason, detail: "the credential this stream was opened with has ended; sign in again" };
    // Before the stream starts the response belongs to Fastify (the handler answers 401).
    if (this.d.res.headersSent) this.write(`event: error\ndata: ${JSON.stringify(data)}\n\n`);
    this.close();
  }

  close() {
    if (this.closed) return;
    this.phase = "closed";
    this.release?.();
    this.d.registry.delete(this);
    for (const t of this.timers) clearInterval(t);
    this.sub.unsubscribe();
    // Before the stream starts the response belongs to Fastify (it sends the problem).
    if (this.d.res.headersSent && !this.d.res.writableEnded) this.d.res.end();
  }
}
