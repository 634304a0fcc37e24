import { eventually, type ServiceProcess } from "@orch/kit/testing";

/** The JSON (pino) records a service process has printed so far. */
export function records(p: ServiceProcess): Array<Record<string, any>> {
  return p.output
    .join("")
    .split("\n")
    .flatMap((line) => {
      if (!line.startsWith("{")) return [];
      try {
        return [JSON.parse(line) as Record<string, any>];
      } catch {
        return [];
      }
    });
}

/** The first record matching `pred`, waiting up to `timeoutMs` (the error names an exit of the process). */
export function waitForRecord(
  p: ServiceProcess,
  pred: (r: Record<string, any>) => boolean,
  timeoutMs = 30_000,
): Promise<Record<string, any>> {
  return eventually(() => {
    if (p.child.exitCode !== null || p.child.signalCode !== null)
      throw new Error(
        `${p.name} exited (${p.child.exitCode ?? p.child.signalCode}):\n${p.output.join("").slice(-3000)}`,
      );
    return records(p).find(pred);
  }, timeoutMs);
}

/** Resolves once a service printed "<name> started" (runMain: connected, migrated, serving). */
export const started = (p: ServiceProcess, service: string, timeoutMs = 30_000) =>
  waitForRecord(p, (r) => r.msg === `${service} started`, timeoutMs);
