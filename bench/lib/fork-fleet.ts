/**
 * A load-generator child (one of bench/lib/sim-*.ts run as a script) driven over IPC: its reports
 * awaited by type, commands sent while it is connected.
 */
import { fork, type ChildProcess } from "node:child_process";

export interface Fleet<Report extends { type: string }, Command> {
  child: ChildProcess;
  /** The fleet's next report of this type; rejects after `ms` when given. */
  next<T extends Report["type"]>(type: T, ms?: number): Promise<Extract<Report, { type: T }>>;
  command(c: Command): boolean;
}

export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>(
      (_, rej) =>
        (timer = setTimeout(() => rej(new Error(`${what}: no result within ${Math.round(ms / 1000)} s`)), ms)),
    ),
  ]).finally(() => clearTimeout(timer));
}

/** Forks `script` (TypeScript, run through tsx from source) with `args`. */
export function forkFleet<Report extends { type: string }, Command>(
  script: string,
  args: string[],
): Fleet<Report, Command> {
  const child = fork(script, args, {
    execArgv: ["--conditions=orch-source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const waiters = new Map<string, (m: Report) => void>();
  child.on("message", (m: Report) => {
    waiters.get(m.type)?.(m);
    waiters.delete(m.type);
  });
  return {
    child,
    next(type, ms) {
      const report = new Promise<Extract<Report, { type: typeof type }>>((r) =>
        waiters.set(type, r as (m: Report) => void),
      );
      return ms === undefined ? report : within(report, ms, `sim ${type}`);
    },
    command: (c) => child.connected && child.send(c as object),
  };
}
