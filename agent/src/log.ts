import type { AgentLogger } from "./runtime.js";

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50, silent: 100 } as const;
export type LogLevel = keyof typeof LEVELS;
export const isLogLevel = (s: string): s is LogLevel => Object.hasOwn(LEVELS, s);

/**
 * JSON lines on stdout (journald and `kubectl logs` friendly), pino's field names so the same
 * tooling reads agent and service logs. No dependency: the agent ships alone onto machines.
 */
export function createAgentLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (l) => process.stdout.write(l),
  base: Record<string, unknown> = {},
): AgentLogger & { child(fields: Record<string, unknown>): AgentLogger } {
  const min = LEVELS[level];
  const emit = (lvl: Exclude<LogLevel, "silent">, obj: object | string, msg?: string) => {
    if (LEVELS[lvl] < min) return;
    const fields = typeof obj === "string" ? { msg: obj } : { ...obj, ...(msg !== undefined ? { msg } : {}) };
    const rec: Record<string, unknown> = {
      level: lvl,
      time: new Date().toISOString(),
      name: "orch-agent",
      ...base,
      ...fields,
    };
    if (rec.err instanceof Error) rec.err = { message: rec.err.message, name: rec.err.name };
    write(`${JSON.stringify(rec)}\n`);
  };
  return {
    debug: (o, m) => emit("debug", o, m),
    info: (o, m) => emit("info", o, m),
    warn: (o, m) => emit("warn", o, m),
    error: (o, m) => emit("error", o, m),
    child: (fields) => createAgentLogger(level, write, { ...base, ...fields }),
  };
}
