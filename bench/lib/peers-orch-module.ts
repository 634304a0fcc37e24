/**
 * The peers job as this project's module: paths under `<base>/{{ tags.host }}`, the host name
 * (tag `host`) as the per-host variable, files and links requiring their directory. JSON text,
 * which the YAML upload reads as it is.
 */
import { JOB_DIRS, JOB_EXECS, JOB_FILES, JOB_LINKS } from "./peers-job.js";

export const ORCH_HOST = "{{ tags.host }}";

export function orchModule(name: string, base: string): string {
  const root = `${base}/${ORCH_HOST}`;
  const resources = [
    ...JOB_DIRS.map((d, i) => ({
      id: d.id,
      type: "directory",
      path: `${root}/${d.rel}`,
      mode: d.mode,
      ...(i === 1 ? { requires: [JOB_DIRS[0]!.id] } : {}),
    })),
    ...JOB_FILES.map((f) => ({
      id: f.id,
      type: "file",
      path: `${root}/${f.rel}`,
      content: f.content(ORCH_HOST),
      mode: f.mode,
      requires: [f.dir],
    })),
    ...JOB_LINKS.map((l) => ({ id: l.id, type: "symlink", path: `${root}/${l.rel}`, target: l.target })),
    ...JOB_EXECS.map((e) => ({
      id: e.id,
      type: "exec",
      command: e.command(root, ORCH_HOST),
      creates: `${root}/${e.creates}`,
    })),
  ];
  return JSON.stringify({ name, version: 1, resources }, null, 1);
}
