/**
 * The processes a soak watches, found in /proc rather than asked of the stack: the fault stack's
 * contract names services and agents but not their pids, and agents may run behind `ip netns exec`
 * wrappers. Every descendant of the bench process is classified by its command line.
 */
import { readdirSync, readFileSync } from "node:fs";

export type ProcKind = "service" | "agent" | "nats";

export interface WatchedProc {
  /** Stable across samples: the service name, `nats`, or `agent-<n>` in pid order. */
  label: string;
  pid: number;
  kind: ProcKind;
}

interface ProcEntry {
  pid: number;
  ppid: number;
  argv: string[];
}

function readProc(pid: number): ProcEntry | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The comm field may contain spaces and parentheses: the fields after it start after the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
    return { pid, ppid, argv };
  } catch {
    return undefined; // it exited between readdir and read
  }
}

/** Every live process below `root` (not `root` itself). */
export function descendants(root: number): ProcEntry[] {
  const all = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readProc(Number(d)))
    .filter((p): p is ProcEntry => p !== undefined);
  const children = new Map<number, ProcEntry[]>();
  for (const p of all) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const out: ProcEntry[] = [];
  const queue = [root];
  while (queue.length) {
    for (const c of children.get(queue.shift()!) ?? []) {
      out.push(c);
      queue.push(c.pid);
    }
  }
  return out;
}

/** What a command line runs, or undefined for processes the soak does not judge (shells, wrappers). */
export function classify(argv: string[]): { kind: ProcKind; name?: string } | undefined {
  const exe = argv[0] ?? "";
  if (/(^|\/)nats-server$/.test(exe)) return { kind: "nats" };
  if (!/(^|\/)node$/.test(exe)) return undefined;
  for (const a of argv.slice(1)) {
    const svc = /\/services\/([\w-]+)\/dist\/main\.js$/.exec(a);
    if (svc) return { kind: "service", name: svc[1]! };
    if (/\/agent\/dist\/main\.js$/.test(a)) return { kind: "agent" };
  }
  return undefined;
}

/** The services, agents and nats-server(s) below `root`, labelled. */
export function watchedProcs(root: number = process.pid): WatchedProc[] {
  const out: WatchedProc[] = [];
  let agents = 0;
  let nats = 0;
  for (const p of descendants(root).sort((a, b) => a.pid - b.pid)) {
    const c = classify(p.argv);
    if (!c) continue;
    const label =
      c.kind === "service" ? c.name! : c.kind === "agent" ? `agent-${++agents}` : nats++ ? `nats-${nats}` : "nats";
    out.push({ label, pid: p.pid, kind: c.kind });
  }
  return out;
}

/** Resident set size in MiB (VmRSS), or undefined once the process is gone. */
export function rssMiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}
