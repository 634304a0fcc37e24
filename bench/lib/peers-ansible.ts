/**
 * Ansible on the peers job: ansible-playbook from Debian, one inventory host per managed root,
 * connection `local` (no SSH, so its figures are a lower bound), no fact gathering, forks = N.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ansibleInventory, ansiblePlaybook, ansibleTemplates, parseRecap } from "./peers-ansible-files.js";
import { runMeasured } from "./peers-cpu.js";
import type { PeerTool, PhaseResult } from "./peers-phase.js";

export function ansibleTool(dir: string, hosts: string[]): PeerTool {
  const roots = new Map(hosts.map((h) => [h, join(dir, "roots", h)]));
  for (const r of roots.values()) mkdirSync(r, { recursive: true, mode: 0o755 });
  const tpl = join(dir, "templates");
  mkdirSync(tpl, { recursive: true });
  for (const [name, text] of ansibleTemplates()) writeFileSync(join(tpl, name), text);
  writeFileSync(join(dir, "inventory.json"), ansibleInventory([...roots].map(([name, root]) => ({ name, root }))));
  writeFileSync(join(dir, "playbook.json"), ansiblePlaybook(tpl));
  mkdirSync(join(dir, "tmp"), { recursive: true });
  const env = {
    ANSIBLE_FORKS: String(hosts.length),
    ANSIBLE_GATHERING: "explicit",
    ANSIBLE_HOST_KEY_CHECKING: "False",
    ANSIBLE_RETRY_FILES_ENABLED: "False",
    ANSIBLE_NOCOLOR: "1",
    ANSIBLE_LOCAL_TEMP: join(dir, "tmp"),
    ANSIBLE_REMOTE_TEMP: join(dir, "tmp"),
  };
  const run = async (flags: string): Promise<PhaseResult> => {
    const m = await runMeasured(`ansible-playbook -i inventory.json ${flags} playbook.json`, env, dir);
    const recap = parseRecap(m.stdout);
    const changed = Object.fromEntries(recap.map((r) => [r.host, r.changed]));
    const bad = recap.filter((r) => r.failed > 0 || r.unreachable > 0).map((r) => r.host);
    const error =
      m.code !== 0 || recap.length !== hosts.length || bad.length > 0
        ? `ansible-playbook exited ${m.code}, ${recap.length}/${hosts.length} hosts in the recap, failed: ${bad.join(",") || "none"}\n${m.stdout.slice(-2000)}${m.stderr.slice(-2000)}`
        : undefined;
    return { wallS: m.wallS, cpuS: m.cpuS, changed, ...(error ? { error } : {}) };
  };
  return {
    name: "ansible",
    roots,
    apply: () => run(""),
    dryRun: () => run("--check --diff"),
    drift: () => run("--check --diff"),
    note: `ansible: ansible-playbook, forks=${hosts.length}, connection local (no SSH: a lower bound), no fact gathering; CPU = its whole process tree`,
    stop: async () => {},
  };
}
