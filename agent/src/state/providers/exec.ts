import { access, stat } from "node:fs/promises";
import { absPath, onlyKeys, optInt, optStr, optStrMap } from "../spec.js";
import { budget, run, type RunResult } from "../proc.js";
import { runScript } from "../script.js";
import { SpecError, type Provider, type ProviderContext, type Spec } from "../types.js";

const FIELDS = ["command", "script", "creates", "onlyif", "unless", "env", "cwd", "timeout_seconds"];
const DEFAULT_TIMEOUT_S = 300;

interface Want {
  command: string | undefined;
  script: string | undefined;
  creates: string | undefined;
  onlyif: string | undefined;
  unless: string | undefined;
  env: Record<string, string> | undefined;
  cwd: string | undefined;
  timeoutMs: number;
}

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const command = optStr(spec, "command");
  const script = optStr(spec, "script");
  if ((command === undefined || command === "") === (script === undefined || script === ""))
    throw new SpecError(`exactly one of "command" or "script" is required`);
  const timeout = optInt(spec, "timeout_seconds") ?? DEFAULT_TIMEOUT_S;
  if (timeout === 0) throw new SpecError(`field "timeout_seconds" must be at least 1`);
  return {
    command,
    script,
    creates: spec.creates === undefined ? undefined : absPath(spec, "creates"),
    onlyif: optStr(spec, "onlyif"),
    unless: optStr(spec, "unless"),
    env: optStrMap(spec, "env"),
    cwd: spec.cwd === undefined ? undefined : absPath(spec, "cwd"),
    timeoutMs: timeout * 1000,
  };
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

function describe(w: Want): string {
  return w.command !== undefined ? `run: ${w.command}\n` : `run script (${w.script!.split("\n").length} lines)\n`;
}

function failure(what: string, r: RunResult, timeoutMs: number): string {
  if (r.spawnError) return `${what} could not start: ${r.spawnError}`;
  if (r.timedOut) return `${what} timed out after ${Math.round(timeoutMs / 1000)} s; its process group was killed`;
  if (r.code === null) return `${what} was killed by ${r.signal}`;
  return `${what} exited with code ${r.code}`;
}

type Decision = { run: true; reason: string } | { run: false; reason: string } | { error: string };

/**
 * Evaluates creates/onlyif/unless. Guards run in plan too: by contract they are read-only tests
 * (`test -f`, `grep -q`), which is what makes an exec's plan exact.
 */
async function decide(w: Want, ctx: ProviderContext): Promise<Decision> {
  if (w.creates !== undefined && (await exists(w.creates)))
    return { run: false, reason: `skipped: ${w.creates} exists (creates)` };
  for (const [kind, cmd] of [
    ["onlyif", w.onlyif],
    ["unless", w.unless],
  ] as const) {
    if (cmd === undefined) continue;
    const timeoutMs = budget(w.timeoutMs, ctx.deadline);
    const r = await run("/bin/sh", ["-c", cmd], { cwd: w.cwd, env: w.env, timeoutMs });
    if (r.spawnError || r.timedOut || r.code === null) return { error: failure(`${kind} guard`, r, timeoutMs) };
    if (kind === "onlyif" && r.code !== 0) return { run: false, reason: `skipped: onlyif exited ${r.code}` };
    if (kind === "unless" && r.code === 0) return { run: false, reason: "skipped: unless exited 0" };
  }
  return { run: true, reason: "" };
}

async function cwdMissing(w: Want): Promise<boolean> {
  if (w.cwd === undefined) return false;
  return !(await stat(w.cwd).then(
    (s) => s.isDirectory(),
    () => false,
  ));
}

async function runMain(w: Want, ctx: ProviderContext): Promise<{ r: RunResult; timeoutMs: number }> {
  const timeoutMs = budget(w.timeoutMs, ctx.deadline);
  if (w.command !== undefined)
    return { r: await run("/bin/sh", ["-c", w.command], { cwd: w.cwd, env: w.env, timeoutMs }), timeoutMs };
  const r = await runScript(w.script!, "orch-exec-", { cwd: w.cwd, env: w.env, timeoutMs });
  return { r, timeoutMs };
}

export function execProvider(): Provider {
  return {
    async check(spec, ctx) {
      const w = parse(spec);
      // A cwd created by an earlier resource of the same apply does not exist yet in plan.
      if (await cwdMissing(w))
        return {
          changed: true,
          diff: describe(w),
          observed: { would_run: true },
          message: `cwd ${w.cwd} does not exist yet; guards not evaluated`,
        };
      const d = await decide(w, ctx);
      if ("error" in d) throw new SpecError(d.error);
      return {
        changed: d.run,
        diff: d.run ? describe(w) : "",
        observed: { would_run: d.run },
        ...(d.run ? {} : { message: d.reason }),
      };
    },
    async apply(spec, ctx) {
      const w = parse(spec);
      if (await cwdMissing(w)) throw new SpecError(`cwd ${w.cwd} does not exist`);
      const d = await decide(w, ctx);
      if ("error" in d) throw new SpecError(d.error);
      if (!d.run)
        return { changed: false, diff: "", message: d.reason, stdout: "", stderr: "", observed: { ran: false } };
      const { r, timeoutMs } = await runMain(w, ctx);
      const ok = !r.spawnError && !r.timedOut && r.code === 0;
      return {
        changed: true,
        failed: !ok,
        diff: describe(w),
        message: ok ? "exited with code 0" : failure(w.command !== undefined ? "command" : "script", r, timeoutMs),
        stdout: r.stdout,
        stderr: r.stderr,
        observed: { ran: true, exit_code: r.code ?? -1, timed_out: r.timedOut },
      };
    },
  };
}
