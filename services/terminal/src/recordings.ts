import { mkdirSync } from "node:fs";
import { unlink } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { withJobLock } from "@orch/kit";
import { agentTerminal } from "./agent.js";
import { closedEvent } from "./closed-event.js";
import { encodeControl, termSubject, type Control } from "./control.js";
import { sessionsDb, type SessionRow } from "./db/sessions.js";
import { ticketsDb } from "./db/tickets.js";
import type { TerminalDeps } from "./deps.js";
import { startRecorder, type Recorder } from "./recorder.js";
import {
  initialRecordingState,
  step,
  type Limits,
  type Outcome,
  type RecordingEffect,
  type RecordingEvent,
  type RecordingState,
} from "./recording-machine.js";
import { headerLine, markerLine, openTranscript, repairTail, sha256File } from "./transcript.js";

const TICK_MS = 250;

interface Live {
  row: SessionRow;
  rec: Recorder;
  state: RecordingState;
}

export interface Recordings {
  readonly replicaId: string;
  transcriptPath(file: string): string;
  /** Starts recording a new session (before the agent is asked for the PTY). */
  begin(row: SessionRow): Promise<void>;
  /** Drops a session whose PTY never came up: no row, no file. */
  abort(id: string): Promise<void>;
  /** Sessions recorded by this replica. */
  owned(): string[];
  /** Takes over and settles sessions whose recorder is gone; returns how many it adopted. */
  sweep(): Promise<number>;
  /** Stops recording and hands the sessions over (another replica resumes them). */
  stop(): Promise<void>;
}

/**
 * This replica's recordings. The replica that opened a session records it and holds a lease row
 * refreshed every lease/3; when a lease lapses (crash, partition) another replica's sweep claims
 * the session atomically and either resumes the recording (the agent still runs the PTY) or
 * finalises it as failed. Finalisation (status, closed_at, SHA-256, event) is done by the owner
 * only, so exactly one replica writes each transcript and each closed event.
 *
 * What happens to each session is decided by recording-machine.ts; this driver feeds it the
 * recorder's hooks, ticks and lease results, and performs the effects it returns.
 */
export function createRecordings(deps: TerminalDeps, replicaId: string): Recordings {
  const d = new RecordingsDriver(deps, replicaId);
  return {
    replicaId,
    transcriptPath: (file) => d.pathOf(file),
    begin: (row) => d.record(row, false),
    abort: (id) => d.abort(id),
    owned: () => [...d.live.keys()],
    sweep: () => d.sweep(),
    stop: () => d.stop(),
  };
}

class RecordingsDriver {
  readonly live = new Map<string, Live>();
  /** Finalisations under way (stop waits for them). */
  private readonly finishing = new Set<Promise<void>>();
  private readonly dir: string;
  private readonly leaseMs: number;
  private readonly limits: Limits;
  private readonly tick: NodeJS.Timeout;
  private readonly leaseTimer: NodeJS.Timeout;

  constructor(
    private readonly deps: TerminalDeps,
    private readonly replicaId: string,
  ) {
    const cfg = deps.config.terminal;
    this.dir = isAbsolute(cfg.transcript_dir) ? cfg.transcript_dir : resolve(process.cwd(), cfg.transcript_dir);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.leaseMs = cfg.lease_seconds * 1000;
    this.limits = {
      agentSilenceMs: cfg.agent_silence_seconds * 1000,
      idleTimeoutMs: cfg.idle_timeout_seconds * 1000,
      maxDurationMs: cfg.max_duration_seconds * 1000,
      heartbeatMs: cfg.heartbeat_seconds * 1000,
    };
    this.tick = setInterval(() => this.onTick(), TICK_MS);
    this.tick.unref();
    this.leaseTimer = setInterval(
      () => {
        void this.refreshLeases()
          .then(() => this.sweep())
          .catch((err) => deps.log.warn({ err: (err as Error).message }, "terminal lease refresh or sweep failed"));
      },
      Math.max(200, this.leaseMs / 3),
    );
    this.leaseTimer.unref();
  }

  pathOf(file: string): string {
    return join(this.dir, file);
  }

  private publishCtl(id: string, m: Control): void {
    this.deps.nc.publish(termSubject(id, "ctl"), encodeControl(m));
  }

  /** Steps the session's machine and performs the effects, in order. */
  private async dispatch(entry: Live, event: RecordingEvent): Promise<void> {
    const t = step(entry.state, event, this.limits);
    entry.state = t.state;
    for (const effect of t.effects) await this.perform(entry, effect);
  }

  private perform(entry: Live, effect: RecordingEffect): Promise<void> {
    const id = entry.row.id;
    switch (effect.type) {
      case "finish":
        // Not awaited by the caller's loop: the tick and hooks go on while the file is hashed.
        void this.finish(entry, effect.outcome);
        return Promise.resolve();
      case "send_close":
        this.publishCtl(id, { type: "close", reason: effect.reason });
        return Promise.resolve();
      case "send_keepalive":
        this.publishCtl(id, { type: "keepalive" });
        return Promise.resolve();
      case "release":
        if (effect.why === "lease_lost")
          // We stalled past the lease and another replica claimed it: stop writing, it records now.
          this.deps.log.warn({ session: id }, "lost the lease of a terminal session; another replica records it");
        this.live.delete(id);
        return entry.rec.stop().catch(() => {});
      case "discard":
        return entry.rec
          .stop()
          .catch(() => {})
          .then(() => unlink(this.pathOf(entry.row.transcript_file)).catch(() => {}));
    }
  }

  private finish(entry: Live, o: Outcome): Promise<void> {
    const p = (async () => {
      try {
        await entry.rec.stop();
        await this.settle(entry.row, o);
      } catch (err) {
        this.deps.log.error(
          { err, session: entry.row.id },
          "finalising a terminal session failed; the sweep will retry once the lease lapses",
        );
      } finally {
        this.live.delete(entry.row.id);
      }
    })();
    this.finishing.add(p);
    void p.finally(() => this.finishing.delete(p));
    return p;
  }

  /** Writes the final state once the file is complete; false when the session is no longer ours. */
  private async settle(row: SessionRow, o: Outcome): Promise<boolean> {
    const { events, clock, log } = this.deps;
    const sha256 = await sha256File(this.pathOf(row.transcript_file));
    const done = await events.tx(async (db, emit) => {
      const r = await sessionsDb.finalise(db, row.id, this.replicaId, {
        status: o.status,
        closedAt: clock.now(),
        exitCode: o.exitCode,
        reason: o.reason,
        sha256,
      });
      if (r) await emit(closedEvent(r));
      return r;
    });
    if (!done) return false;
    // Tells the gateways to close their sockets and the agent to end the PTY if it still runs.
    this.publishCtl(row.id, {
      type: "ended",
      status: done.status,
      reason: done.close_reason ?? o.reason,
      exit_code: done.exit_code,
    });
    log.info({ session: row.id, status: done.status, reason: done.close_reason }, "terminal session finalised");
    return true;
  }

  async record(row: SessionRow, resume: boolean): Promise<void> {
    const { nc, clock } = this.deps;
    const path = this.pathOf(row.transcript_file);
    if (resume) await repairTail(path);
    const writer = await openTranscript(path, this.deps.config.terminal.flush_interval_ms);
    writer.append(
      resume
        ? markerLine(clock.now() - row.opened_at, "recording resumed by another terminal service replica")
        : headerLine({
            cols: row.cols,
            rows: row.rows,
            openedAtMs: row.opened_at,
            shell: row.shell,
            title: `${row.node_name || row.node_id} ${row.id}`,
          }),
    );
    await writer.flush();
    const entry: Live = { row, rec: undefined as unknown as Recorder, state: initialRecordingState(row.opened_at) };
    entry.rec = await startRecorder({
      nc,
      sessionId: row.id,
      openedAtMs: row.opened_at,
      writer,
      clock,
      hooks: {
        exit: (code, signal, reason) => void this.dispatch(entry, { type: "exit", code, signal, reason }),
        closeRequested: () => void this.dispatch(entry, { type: "close_requested", now: clock.now() }),
      },
    });
    this.live.set(row.id, entry);
  }

  private onTick(): void {
    const now = this.deps.clock.now();
    for (const e of this.live.values())
      void this.dispatch(e, {
        type: "tick",
        now,
        lastAgentAt: e.rec.lastAgentAt(),
        lastActivityAt: e.rec.lastActivityAt(),
      });
  }

  private async refreshLeases(): Promise<void> {
    const { pool, clock } = this.deps;
    const held = new Set(await sessionsDb.refreshLeases(pool, this.replicaId, clock.now() + this.leaseMs));
    for (const [id, e] of this.live) if (!held.has(id)) await this.dispatch(e, { type: "lease_lost" });
  }

  /** Settles an adopted session that cannot be resumed. */
  private async settleAbandoned(row: SessionRow, reason: string): Promise<void> {
    await repairTail(this.pathOf(row.transcript_file));
    this.publishCtl(row.id, { type: "close", reason });
    await this.settle(row, { status: "failed", reason, exitCode: null });
  }

  private async adopt(row: SessionRow): Promise<void> {
    if (row.status === "opening") return this.settleAbandoned(row, "open_interrupted");
    let running: boolean | undefined;
    try {
      running = (await agentTerminal(this.deps.nc, row.node_id, 3000).listTerminals({})).sessionIds.includes(row.id);
    } catch {
      running = undefined;
    }
    if (running) {
      this.deps.log.info({ session: row.id }, "resuming the recording of an abandoned terminal session");
      return this.record(row, true);
    }
    // The shell ended (or its agent is gone) while nobody recorded: what was recorded stands.
    return this.settleAbandoned(row, running === false ? "recorder_lost" : "agent_lost");
  }

  async sweep(): Promise<number> {
    const { pool, clock, log } = this.deps;
    let adopted = 0;
    await withJobLock(pool, "terminal.sweep", async () => {
      const now = clock.now();
      // Expired tickets are kept a while so a late attach hears "expired" rather than "unknown".
      await ticketsDb.purgeExpired(pool, now - 3_600_000);
      for (const row of await sessionsDb.abandoned(pool, now, 50)) {
        if (this.live.has(row.id)) continue;
        const claimed = await sessionsDb.claim(pool, row.id, this.replicaId, now, now + this.leaseMs);
        if (!claimed) continue;
        adopted++;
        await this.adopt(claimed).catch((err) =>
          log.error({ err, session: row.id }, "adopting a terminal session failed"),
        );
      }
    });
    return adopted;
  }

  async abort(id: string): Promise<void> {
    const e = this.live.get(id);
    this.live.delete(id);
    this.publishCtl(id, { type: "close", reason: "open_failed" });
    if (e) await this.dispatch(e, { type: "abort" });
    await sessionsDb.remove(this.deps.pool, id);
  }

  async stop(): Promise<void> {
    clearInterval(this.tick);
    clearInterval(this.leaseTimer);
    await Promise.all([...this.finishing]);
    const released = Promise.all([...this.live.values()].map((e) => this.dispatch(e, { type: "shutdown" })));
    this.live.clear();
    await released;
    await sessionsDb
      .releaseLeases(this.deps.pool, this.replicaId)
      .catch((err) => this.deps.log.warn({ err: (err as Error).message }, "releasing terminal leases failed"));
  }
}
