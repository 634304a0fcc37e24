import { fromBinary } from "@bufbuild/protobuf";
import {
  CommandRunEventSchema,
  commandRunFinal,
  commandRunSubject,
  commandTargetFinal,
  type CommandOutput,
  type CommandRun,
  type CommandRunEvent,
  type CommandTarget,
  type StateService,
} from "@orch/contracts";
import type { Client } from "@orch/kit";
import { agentJson, bytesJson, outputJson, runJson } from "../routes/runs-json.js";
import { SseStream, type SseStreamDeps } from "./stream.js";

/** How often a stream re-reads the run, covering status messages lost in transit (core NATS). */
const POLL_MS = 5_000;

export interface CommandStreamDeps extends SseStreamDeps<CommandStream> {
  state: Client<typeof StateService>;
  runId: string;
}

/** Live output sent for one agent: chunks are numbered from 1 per job, so a gap is visible. */
interface LiveOutput {
  next: number;
  gap: boolean;
  stdout: number;
  stderr: number;
}

/**
 * One command run's live view: `event: run` (the run, agents by status) first, the captured output
 * of agents that had already finished, then live `output` and `agent` events, and `summary` +
 * `end` once the run is final. The run subject is subscribed before the snapshot is read, so
 * nothing between the two is missed; events arriving meanwhile wait in `early`. Output of an agent
 * finished at open came from the snapshot, so live chunks for it are dropped rather than doubled.
 * Every POLL_MS the run is read again (status only): it only adds `agent` events for changes whose
 * message was lost and ends the stream when the run ended.
 *
 * Live chunks travel on core NATS and the state service stores an agent's output only when it
 * ends, so a chunk published before the subscription (an agent running at open) or lost in
 * transit would be missing from the stream. Live chunks are therefore sent only while they follow
 * on from seq 1; at the end the run is read once with output and what the stream did not send
 * live (the stored bytes past those sent) goes out with `seq` 0 before the summary.
 */
export class CommandStream extends SseStream<CommandRun> {
  private phase: "opening" | "live" | "closed" = "opening";
  private early: CommandRunEvent[] = [];
  /** Last `agent` event sent per node, to send each change once. */
  private readonly agents = new Map<string, string>();
  private readonly fromSnapshot = new Set<string>();
  private readonly live = new Map<string, LiveOutput>();
  private finishing = false;
  private polling = false;
  private readonly sub;

  constructor(private readonly d: CommandStreamDeps) {
    super(d, "command_stream");
    this.sub = d.nc.subscribe(commandRunSubject(d.runId), {
      callback: (err, msg) => {
        if (err || this.phase === "closed") return;
        let ev: CommandRunEvent;
        try {
          ev = fromBinary(CommandRunEventSchema, msg.data);
        } catch (e) {
          d.log.debug({ err: (e as Error).message, run: d.runId }, "undecodable command run event");
          return;
        }
        if (this.phase === "opening") this.early.push(ev);
        else this.onEvent(ev);
      },
    });
  }

  get closed() {
    return this.phase === "closed";
  }

  /** The first snapshot, with output. */
  protected async snapshot(): Promise<CommandRun> {
    // The subscription must be in place at the server before the snapshot is read.
    await this.d.nc.flush();
    return await this.d.state.getCommandRun({ id: this.d.runId, omitOutput: false }, this.d.call);
  }

  run(first: CommandRun) {
    if (this.d.res.destroyed) return this.close();
    this.channel.start();
    this.phase = "live";
    // The targets are fixed when the run starts.
    this.reaches(first.targets.map((t) => t.nodeId));
    this.send("run", runJson(first, "status"));
    for (const t of first.targets) {
      this.agents.set(t.nodeId, JSON.stringify(agentJson(t, false)));
      if (!commandTargetFinal(t.status)) continue;
      this.fromSnapshot.add(t.nodeId);
      this.sendCaptured(t, "stdout", t.stdout);
      this.sendCaptured(t, "stderr", t.stderr);
    }
    if (commandRunFinal(first.status)) return this.summary(first);
    for (const ev of this.early.splice(0)) this.onEvent(ev);
    if (this.closed) return;
    this.channel.every(POLL_MS, () => void this.poll());
  }

  private sendCaptured(t: CommandTarget, stream: "stdout" | "stderr", bytes: Uint8Array) {
    if (bytes.length === 0) return;
    const b = bytesJson(bytes);
    this.send("output", { node_id: t.nodeId, name: t.name, stream, data: b.data, encoding: b.encoding, seq: 0 });
  }

  private onEvent(ev: CommandRunEvent) {
    if (this.closed || this.finishing) return;
    const e = ev.event;
    switch (e.case) {
      case "output":
        this.liveOutput(e.value);
        return;
      case "target":
        this.agent(e.value);
        return;
      case "run":
        if (commandRunFinal(e.value.status)) void this.finish();
        return;
    }
  }

  private liveOutput(o: CommandOutput) {
    if (this.fromSnapshot.has(o.nodeId)) return;
    let l = this.live.get(o.nodeId);
    if (!l) this.live.set(o.nodeId, (l = { next: 1, gap: false, stdout: 0, stderr: 0 }));
    // After a gap, later chunks would come out of order: the end sends the rest from storage.
    if (l.gap || o.seq !== l.next) {
      l.gap = true;
      return;
    }
    l.next++;
    l[o.stream === "stderr" ? "stderr" : "stdout"] += o.data.byteLength;
    this.send("output", outputJson(o));
  }

  /** Stored output of ended agents that the stream has not sent live, as `seq` 0 events. */
  private sendMissed(r: CommandRun) {
    for (const t of r.targets) {
      if (this.fromSnapshot.has(t.nodeId) || !commandTargetFinal(t.status)) continue;
      const l = this.live.get(t.nodeId);
      this.sendCaptured(t, "stdout", t.stdout.subarray(l?.stdout ?? 0));
      this.sendCaptured(t, "stderr", t.stderr.subarray(l?.stderr ?? 0));
    }
  }

  private agent(t: CommandTarget) {
    const json = agentJson(t, false);
    const data = JSON.stringify(json);
    if (this.agents.get(t.nodeId) === data) return;
    this.agents.set(t.nodeId, data);
    this.send("agent", json);
  }

  private read(withOutput = false) {
    return this.d.state.getCommandRun({ id: this.d.runId, omitOutput: !withOutput }, this.d.call);
  }

  /** The safety net: status changes whose message was lost, and the end. */
  private async poll() {
    if (this.closed || this.finishing || this.polling) return;
    this.polling = true;
    try {
      const r = await this.read();
      if (this.closed || this.finishing) return;
      for (const t of r.targets) this.agent(t);
      if (commandRunFinal(r.status)) void this.finish();
    } catch (err) {
      this.d.log.debug({ err: (err as Error).message, run: this.d.runId }, "command stream read failed; retrying");
    } finally {
      this.polling = false;
    }
  }

  /** The run ended: read it once more, with output, for what was missed and the summary. */
  private async finish() {
    if (this.finishing) return;
    this.finishing = true;
    for (let attempt = 0; !this.closed; attempt++) {
      try {
        const r = await this.read(true);
        if (this.closed) return;
        this.sendMissed(r);
        return this.summary(r);
      } catch (err) {
        this.d.log.debug({ err: (err as Error).message, run: this.d.runId }, "command stream summary read failed");
        if (attempt >= 2) break;
      }
    }
    // Never reached the state service: the poll (still armed) ends the stream later.
    this.finishing = false;
  }

  private summary(r: CommandRun) {
    if (this.closed) return;
    for (const t of r.targets) this.agent(t);
    this.send("summary", runJson(r, "status"));
    this.send("end", { status: r.status });
    this.close();
  }

  private send(event: string, data: unknown) {
    this.channel.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  protected released() {
    this.phase = "closed";
    this.sub.unsubscribe();
  }
}
