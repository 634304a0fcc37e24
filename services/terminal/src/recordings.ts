import { mkdirSync } from "node:fs";
import { unlink } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { SYSTEM_ACTOR, withJobLock } from "@orch/kit";
import { agentTerminal } from "./agent.js";
import { encodeControl, termSubject } from "./control.js";
import { sessionsDb, type SessionRow } from "./db/sessions.js";
import { ticketsDb } from "./db/tickets.js";
import type { TerminalDeps } from "./deps.js";
import { startRecorder, type Recorder } from "./recorder.js";
import { headerLine, markerLine, openTranscript, repairTail, sha256File } from "./transcript.js";

/** After a close is requested, how long the recorder waits for the shell's last bytes and exit. */
const CLOSE_GRACE_MS = 3000;
const TICK_MS = 250;

interface Live {
  row: SessionRow;
  rec: Recorder;
  closing: { reason: string; since: number } | undefined;
  lastKeepalive: number;
  finishing: boolean;
}

interface Outcome {
  status: "closed" | "failed";
  reason: string;
  exitCode: number | null;
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
 */
export function createRecordings(deps: TerminalDeps, replicaId: string): Recordings {
  const { nc, pool, clock, events, log } = deps;
  const cfg = deps.config.terminal;
  const dir = isAbsolute(cfg.transcript_dir) ? cfg.transcript_dir : resolve(process.cwd(), cfg.transcript_dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const pathOf = (file: string) => join(dir, file);
  const leaseMs = cfg.lease_seconds * 1000;
  const live = new Map<string, Live>();
  const finishing = new Set<Promise<void>>();
  const publishCtl = (id: string, m: Parameters<typeof encodeControl>[0]) =>
    nc.publish(termSubject(id, "ctl"), encodeControl(m));

  const closedEvent = (r: SessionRow) => {
    const by = r.closed_by_id
      ? { id: r.closed_by_id, name: r.closed_by_name ?? r.closed_by_id, type: "operator" }
      : r.close_reason === "exit" || r.close_reason === "detached"
        ? { id: r.operator_id, name: r.operator_name, type: "operator" }
        : SYSTEM_ACTOR;
    const duration = Math.max(0, Math.round(((r.closed_at ?? r.opened_at) - r.opened_at) / 1000));
    return {
      type: "terminal.session.closed" as const,
      severity: r.status === "failed" ? ("warning" as const) : undefined,
      summary: `terminal session of ${r.operator_name} on ${r.node_name || r.node_id} ${r.status} (${r.close_reason}) after ${duration}s`,
      actor: by,
      target: { id: r.id, name: r.node_name || r.node_id, type: "terminal_session" },
      metadata: {
        node_id: r.node_id,
        node_name: r.node_name,
        operator_id: r.operator_id,
        operator_name: r.operator_name,
        status: r.status,
        reason: r.close_reason,
        exit_code: r.exit_code,
        duration_seconds: duration,
        sha256: r.sha256,
      },
    };
  };

  /** Writes the final state once the file is complete; false when the session is no longer ours. */
  async function settle(row: SessionRow, o: Outcome): Promise<boolean> {
    const sha256 = await sha256File(pathOf(row.transcript_file));
    const done = await events.tx(async (db, emit) => {
      const r = await sessionsDb.finalise(db, row.id, replicaId, {
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
    publishCtl(row.id, {
      type: "ended",
      status: done.status,
      reason: done.close_reason ?? o.reason,
      exit_code: done.exit_code,
    });
    log.info({ session: row.id, status: done.status, reason: done.close_reason }, "terminal session finalised");
    return true;
  }

  function finish(entry: Live, o: Outcome): Promise<void> {
    if (entry.finishing) return Promise.resolve();
    entry.finishing = true;
    const p = (async () => {
      try {
        await entry.rec.stop();
        await settle(entry.row, o);
      } catch (err) {
        log.error(
          { err, session: entry.row.id },
          "finalising a terminal session failed; the sweep will retry once the lease lapses",
        );
      } finally {
        live.delete(entry.row.id);
      }
    })();
    finishing.add(p);
    void p.finally(() => finishing.delete(p));
    return p;
  }

  async function record(row: SessionRow, resume: boolean): Promise<void> {
    const path = pathOf(row.transcript_file);
    if (resume) await repairTail(path);
    const writer = await openTranscript(path, cfg.flush_interval_ms);
    if (resume)
      writer.append(markerLine(clock.now() - row.opened_at, "recording resumed by another terminal service replica"));
    else
      writer.append(
        headerLine({
          cols: row.cols,
          rows: row.rows,
          openedAtMs: row.opened_at,
          shell: row.shell,
          title: `${row.node_name || row.node_id} ${row.id}`,
        }),
      );
    await writer.flush();
    const entry: Live = {
      row,
      rec: undefined as unknown as Recorder,
      closing: undefined,
      lastKeepalive: 0,
      finishing: false,
    };
    entry.rec = await startRecorder({
      nc,
      sessionId: row.id,
      openedAtMs: row.opened_at,
      writer,
      clock,
      hooks: {
        exit(code, signal, reason) {
          const exitCode = signal ? 128 + signal : code;
          // An agent ends a PTY nobody records ("orphaned"); "agent_disconnected" is for a relay
          // that reports a dropped link on behalf of its agent.
          const outcome: Outcome =
            reason === "orphaned"
              ? { status: "failed", reason: "recorder_lost", exitCode }
              : reason === "agent_disconnected"
                ? { status: "failed", reason: "agent_lost", exitCode: null }
                : {
                    status: "closed",
                    reason: entry.closing?.reason ?? (reason === "detached" ? "detached" : "exit"),
                    exitCode,
                  };
          void finish(entry, outcome);
        },
        closeRequested() {
          entry.closing ??= { reason: "closed_by_operator", since: clock.now() };
        },
      },
    });
    live.set(row.id, entry);
  }

  const tick = setInterval(() => {
    const now = clock.now();
    for (const e of live.values()) {
      if (e.finishing) continue;
      const id = e.row.id;
      if (e.closing) {
        if (now - e.closing.since > CLOSE_GRACE_MS)
          void finish(e, { status: "closed", reason: e.closing.reason, exitCode: null });
      } else if (now - e.rec.lastAgentAt() > cfg.agent_silence_seconds * 1000) {
        void finish(e, { status: "failed", reason: "agent_lost", exitCode: null });
        continue;
      } else if (
        now - e.rec.lastActivityAt() > cfg.idle_timeout_seconds * 1000 ||
        now - e.row.opened_at > cfg.max_duration_seconds * 1000
      ) {
        const reason = now - e.row.opened_at > cfg.max_duration_seconds * 1000 ? "max_duration" : "idle_timeout";
        e.closing = { reason, since: now };
        publishCtl(id, { type: "close", reason });
      }
      if (now - e.lastKeepalive >= cfg.heartbeat_seconds * 1000) {
        e.lastKeepalive = now;
        publishCtl(id, { type: "keepalive" });
      }
    }
  }, TICK_MS);
  tick.unref();

  async function refreshLeases(): Promise<void> {
    const held = new Set(await sessionsDb.refreshLeases(pool, replicaId, clock.now() + leaseMs));
    for (const [id, e] of live) {
      if (held.has(id) || e.finishing) continue;
      // Another replica claimed it (we stalled past the lease): stop writing, it records now.
      log.warn({ session: id }, "lost the lease of a terminal session; another replica records it");
      live.delete(id);
      await e.rec.stop().catch(() => {});
    }
  }

  /** Settles an adopted session that cannot be resumed. */
  async function settleAbandoned(row: SessionRow, reason: string): Promise<void> {
    await repairTail(pathOf(row.transcript_file));
    publishCtl(row.id, { type: "close", reason });
    await settle(row, { status: "failed", reason, exitCode: null });
  }

  async function adopt(row: SessionRow): Promise<void> {
    if (row.status === "opening") return settleAbandoned(row, "open_interrupted");
    let running: boolean | undefined;
    try {
      running = (await agentTerminal(nc, row.node_id, 3000).listTerminals({})).sessionIds.includes(row.id);
    } catch {
      running = undefined;
    }
    if (running) {
      log.info({ session: row.id }, "resuming the recording of an abandoned terminal session");
      return record(row, true);
    }
    // The shell ended (or its agent is gone) while nobody recorded: what was recorded stands.
    return settleAbandoned(row, running === false ? "recorder_lost" : "agent_lost");
  }

  async function sweep(): Promise<number> {
    let adopted = 0;
    await withJobLock(pool, "terminal.sweep", async () => {
      const now = clock.now();
      // Expired tickets are kept a while so a late attach hears "expired" rather than "unknown".
      await ticketsDb.purgeExpired(pool, now - 3_600_000);
      for (const row of await sessionsDb.abandoned(pool, now, 50)) {
        if (live.has(row.id)) continue;
        const claimed = await sessionsDb.claim(pool, row.id, replicaId, now, now + leaseMs);
        if (!claimed) continue;
        adopted++;
        await adopt(claimed).catch((err) => log.error({ err, session: row.id }, "adopting a terminal session failed"));
      }
    });
    return adopted;
  }

  const leaseTimer = setInterval(
    () => {
      void refreshLeases()
        .then(() => sweep())
        .catch((err) => log.warn({ err: (err as Error).message }, "terminal lease refresh or sweep failed"));
    },
    Math.max(200, leaseMs / 3),
  );
  leaseTimer.unref();

  return {
    replicaId,
    transcriptPath: pathOf,
    begin: (row) => record(row, false),
    async abort(id) {
      const e = live.get(id);
      live.delete(id);
      publishCtl(id, { type: "close", reason: "open_failed" });
      if (e) {
        e.finishing = true;
        await e.rec.stop().catch(() => {});
        await unlink(pathOf(e.row.transcript_file)).catch(() => {});
      }
      await sessionsDb.remove(pool, id);
    },
    owned: () => [...live.keys()],
    sweep,
    async stop() {
      clearInterval(tick);
      clearInterval(leaseTimer);
      await Promise.all([...finishing]);
      const entries = [...live.values()].filter((e) => !e.finishing);
      live.clear();
      await Promise.all(entries.map((e) => e.rec.stop().catch(() => {})));
      await sessionsDb
        .releaseLeases(pool, replicaId)
        .catch((err) => log.warn({ err: (err as Error).message }, "releasing terminal leases failed"));
    },
  };
}
