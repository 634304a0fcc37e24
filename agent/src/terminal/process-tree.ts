import { readdirSync, readFileSync } from "node:fs";

/**
 * Pids of every process in the POSIX session led by `sid`. The PTY's shell is a session leader
 * (forkpty calls setsid), and interactive shells move background jobs into their own process
 * groups, so killing the shell's process group alone would leave jobs running.
 */
export function sessionMembers(sid: number): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out; // not Linux: the process-group kill is all we can do
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // Fields after the command (which may contain spaces and parentheses): state ppid pgrp session ...
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(rest[3]) === sid) out.push(Number(name));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

const trySignal = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
};

/** Signals the shell's process group and every other process of its session. */
export function signalSession(pid: number, signal: NodeJS.Signals): void {
  trySignal(-pid, signal);
  for (const member of sessionMembers(pid)) trySignal(member, signal);
}
