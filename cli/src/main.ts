#!/usr/bin/env node
/** orchctl entry point: wires the real process into `run` (see program.ts for the commands). */
import { run } from "./program.js";

// `orchctl ... | head` closes stdout early; that is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw err;
});

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
