import { runIsFinal, runProgressSubject, type AssignmentRun, type StateService } from "@orch/contracts";
import type { Client } from "@orch/kit";
import { runJson } from "../routes/assignments-json.js";
import { SseStream, type SseStreamDeps } from "./stream.js";

/** How often a stream re-reads the run, covering progress messages lost in transit (core NATS). */
const POLL_MS = 5_000;

export interface RunStreamDeps extends SseStreamDeps<RunStream> {
  state: Client<typeof StateService>;
  name: string;
  runId: string;
}

export const isFinal = (r: Pick<AssignmentRun, "status">) => runIsFinal(r.status);

/**
 * One run's live view: `event: run` with the whole run (RunOut) whenever it changed, then
 * `event: end` once its status is final. The progress subject is subscribed before the first read,
 * so a change between the snapshot and the subscription cannot be missed. A progress message only
 * says "read again": the view always comes from GetAssignmentRun (scoped to the caller), at most
 * one read in flight and one pending, so a burst of messages costs two reads. A reconnecting
 * client simply gets the current snapshot: the stream needs no event ids.
 */
export class RunStream extends SseStream<AssignmentRun> {
  private phase: "opening" | "live" | "closed" = "opening";
  private last = "";
  private reading = false;
  private pending = false;
  private readonly sub;

  constructor(private readonly d: RunStreamDeps) {
    super(d, "run_stream");
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

  protected async snapshot(): Promise<AssignmentRun> {
    // The subscription must be in place at the server before the snapshot is read.
    await this.d.nc.flush();
    return await this.read();
  }

  run(first: AssignmentRun) {
    if (this.d.res.destroyed) return this.close();
    this.channel.start();
    this.phase = "live";
    // The targets are fixed when the run starts; a scoped operator's view holds only those in scope.
    this.reaches(first.targets.map((t) => t.nodeId));
    this.show(first);
    if (this.closed) return;
    this.channel.every(POLL_MS, () => this.refresh());
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
    this.channel.write(chunk);
  }

  protected released() {
    this.phase = "closed";
    this.sub.unsubscribe();
  }
}
