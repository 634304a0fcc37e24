import { Writable } from "node:stream";
import { createLogger, type Logger } from "../logger.js";

/** A logger whose lines are kept in memory (for asserting what was, or was not, logged). */
export function memoryLogger(name = "test", level = "debug"): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const dest = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: createLogger({ name, level, destination: dest }), lines };
}

export const silentLogger = (): Logger => createLogger({ name: "test", level: "silent" });
