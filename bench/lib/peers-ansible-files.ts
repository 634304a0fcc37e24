/**
 * The peers job for Ansible: an inventory of N local hosts (each with its root as a host var),
 * one Jinja template per file and a playbook of the 20 tasks. Written as JSON, which YAML reads.
 */
import { JOB_DIRS, JOB_EXECS, JOB_FILES, JOB_LINKS } from "./peers-job.js";

export const ANSIBLE_HOST = "{{ peer_host }}";
const ROOT = "{{ peer_root }}";

export function ansibleInventory(hosts: { name: string; root: string }[]): string {
  const h: Record<string, Record<string, string>> = {};
  for (const x of hosts)
    h[x.name] = {
      ansible_connection: "local",
      ansible_python_interpreter: "/usr/bin/python3",
      peer_host: x.name,
      peer_root: x.root,
    };
  return JSON.stringify({ all: { hosts: h } }, null, 1);
}

/** Template file name (under templates/) → its Jinja text. */
export function ansibleTemplates(): Map<string, string> {
  return new Map(JOB_FILES.map((f) => [`${f.id}.j2`, f.content(ANSIBLE_HOST)]));
}

export function ansiblePlaybook(templatesDir: string): string {
  const tasks = [
    ...JOB_DIRS.map((d) => ({ name: d.id, file: { path: `${ROOT}/${d.rel}`, state: "directory", mode: d.mode } })),
    ...JOB_FILES.map((f) => ({
      name: f.id,
      template: { src: `${templatesDir}/${f.id}.j2`, dest: `${ROOT}/${f.rel}`, mode: f.mode },
    })),
    ...JOB_LINKS.map((l) => ({ name: l.id, file: { src: l.target, dest: `${ROOT}/${l.rel}`, state: "link" } })),
    ...JOB_EXECS.map((e) => ({
      name: e.id,
      command: { cmd: e.command(ROOT, ANSIBLE_HOST), creates: `${ROOT}/${e.creates}` },
    })),
  ];
  return JSON.stringify([{ name: "peers", hosts: "all", gather_facts: false, tasks }], null, 1);
}

export interface RecapLine {
  host: string;
  ok: number;
  changed: number;
  unreachable: number;
  failed: number;
}

/** The PLAY RECAP lines of ansible-playbook's default output. */
export function parseRecap(stdout: string): RecapLine[] {
  const out: RecapLine[] = [];
  const at = stdout.lastIndexOf("PLAY RECAP");
  if (at < 0) return out;
  for (const line of stdout.slice(at).split("\n")) {
    const m = /^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)/.exec(line);
    if (m)
      out.push({
        host: m[1]!,
        ok: Number(m[2]),
        changed: Number(m[3]),
        unreachable: Number(m[4]),
        failed: Number(m[5]),
      });
  }
  return out;
}
