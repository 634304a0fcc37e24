import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run, type RunOptions, type RunResult } from "./proc.js";

/**
 * How a script's file is started: by the interpreter its `#!` line names (with that line's one
 * optional argument, as the kernel reads it), else by /bin/sh. The file itself is never exec'd:
 * another job forking while this one's write descriptor is still open would make that exec fail
 * with ETXTBSY ("text file busy"), so the interpreter is started directly and only reads it.
 */
export function scriptInvocation(script: string, file: string): { cmd: string; args: string[] } {
  if (!script.startsWith("#!")) return { cmd: "/bin/sh", args: [file] };
  const line = script.slice(2).split("\n", 1)[0]!.trim();
  const space = line.search(/\s/);
  if (line === "") return { cmd: "/bin/sh", args: [file] };
  if (space < 0) return { cmd: line, args: [file] };
  const arg = line.slice(space).trim();
  return { cmd: line.slice(0, space), args: arg === "" ? [file] : [arg, file] };
}

/** Runs a script from a private temp file (mode 0700, removed afterwards); `prefix` names the temp dir. */
export async function runScript(script: string, prefix: string, opts: RunOptions): Promise<RunResult> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    const file = join(dir, "script");
    await writeFile(file, script, { mode: 0o700 });
    const { cmd, args } = scriptInvocation(script, file);
    return await run(cmd, args, opts);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
