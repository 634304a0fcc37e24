/**
 * The peers job for Puppet: one manifest per host (its host name and root as variables, then the
 * 20 resources in manifest order), and the count of resource events in `puppet apply` output.
 */
import { JOB_DIRS, JOB_EXECS, JOB_FILES, JOB_LINKS } from "./peers-job.js";

/** A Puppet double-quoted string: JSON's escapes are Puppet's, and `${host}` still interpolates. */
const dq = (s: string) => JSON.stringify(s);

export function puppetManifest(host: string, root: string): string {
  const res: string[] = [
    ...JOB_DIRS.map((d) => `file { "\${root}/${d.rel}": ensure => directory, mode => '${d.mode}' }`),
    ...JOB_FILES.map(
      (f) =>
        `file { "\${root}/${f.rel}": ensure => file, mode => '${f.mode}', content => ${dq(f.content("${host}"))} }`,
    ),
    ...JOB_LINKS.map((l) => `file { "\${root}/${l.rel}": ensure => link, target => '${l.target}' }`),
    ...JOB_EXECS.map(
      (e) =>
        `exec { '${e.id}': command => ${dq(e.command("${root}", "${host}"))}, creates => "\${root}/${e.creates}", provider => shell }`,
    ),
  ];
  return ["File { backup => false }", `$host = '${host}'`, `$root = '${root}'`, ...res, ""].join("\n");
}

/** Resource events (changes, or would-be changes with --noop) in one run's output. */
export const puppetEvents = (output: string): number =>
  output.split("\n").filter((l) => l.startsWith("Notice: /Stage[main]/")).length;
