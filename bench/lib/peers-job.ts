/**
 * The job every tool of the peers bench does, in one tool-neutral form: per host, a module of 20
 * resources under that host's managed root (4 directories, 12 files from a template with the host
 * name as the per-host variable, 2 symlinks, 2 exec guarded by `creates`). Each tool's rendering
 * (bench/lib/peers-orch-module.ts, peers-ansible-files.ts, peers-puppet-files.ts) only substitutes
 * its own syntax for the host variable and the root, so the bytes written are the same.
 */

export interface JobDir {
  id: string;
  rel: string;
  mode: string;
}
export interface JobFile {
  id: string;
  rel: string;
  mode: string;
  /** The directory resource it lives in (ordering). */
  dir: string;
  /** The file's text with `host` wherever the per-host variable goes. */
  content(host: string): string;
}
export interface JobLink {
  id: string;
  rel: string;
  /** Relative, so the link is the same under every tool's root. */
  target: string;
}
export interface JobExec {
  id: string;
  /** The file the command creates; its existence guards the command. */
  creates: string;
  /** A shell command; `root` and `host` are substituted by each tool. */
  command(root: string, host: string): string;
}

export const JOB_DIRS: JobDir[] = [
  { id: "conf", rel: "conf", mode: "0755" },
  { id: "conf-d", rel: "conf/conf.d", mode: "0750" },
  { id: "data", rel: "data", mode: "0700" },
  { id: "log", rel: "log", mode: "0755" },
];

const pad = (i: number) => String(i).padStart(2, "0");

/** Eight files in conf/ and four in conf/conf.d/, every one naming the host. */
export const JOB_FILES: JobFile[] = Array.from({ length: 12 }, (_, k) => {
  const i = k + 1;
  const inD = i > 8;
  return {
    id: `file-${pad(i)}`,
    rel: inD ? `conf/conf.d/part-${pad(i)}.conf` : `conf/app-${pad(i)}.conf`,
    mode: inD ? "0640" : "0644",
    dir: inD ? "conf-d" : "conf",
    content: (host: string) =>
      `# managed by the peers bench\nhost = ${host}\nservice = app-${pad(i)}\nport = ${8000 + i}\nlabel = ${host}-app-${pad(i)}\n`,
  };
});

export const JOB_LINKS: JobLink[] = [
  { id: "link-current", rel: "current", target: "conf" },
  { id: "link-default", rel: "conf/default.conf", target: "app-01.conf" },
];

export const JOB_EXECS: JobExec[] = [
  {
    id: "exec-init",
    creates: "data/init.stamp",
    command: (root, host) => `sh -c 'umask 022 && echo initialised for ${host} > ${root}/data/init.stamp'`,
  },
  {
    id: "exec-setup",
    creates: "log/setup.done",
    command: (root, host) => `sh -c 'umask 022 && echo setup of ${host} done > ${root}/log/setup.done'`,
  },
];

export const JOB_RESOURCES = JOB_DIRS.length + JOB_FILES.length + JOB_LINKS.length + JOB_EXECS.length;

export const hostName = (i: number) => `host-${pad(i + 1)}`;

/** The file the drift phase edits by hand on the first host. */
export const DRIFT_FILE = JOB_FILES[0]!.rel;
