// The peers job and its three renderings: 20 resources of the asked kinds, this project's module
// accepted by the real module parser, and the same file text from every tool's template syntax.
import t from "tap";
import { parseModule } from "../../services/state/src/module/parse.js";
import {
  ANSIBLE_HOST,
  ansibleInventory,
  ansiblePlaybook,
  ansibleTemplates,
  parseRecap,
} from "../../bench/lib/peers-ansible-files.js";
import { JOB_DIRS, JOB_EXECS, JOB_FILES, JOB_LINKS, JOB_RESOURCES, hostName } from "../../bench/lib/peers-job.js";
import { ORCH_HOST, orchModule } from "../../bench/lib/peers-orch-module.js";
import { parsePeersOptions } from "../../bench/lib/peers-options.js";
import { expectedChanges } from "../../bench/lib/peers-phase.js";
import { puppetEvents, puppetManifest } from "../../bench/lib/peers-puppet-files.js";

t.test("20 resources: 12 files, 4 directories, 2 symlinks, 2 guarded exec", async (t) => {
  t.equal(JOB_FILES.length, 12);
  t.equal(JOB_DIRS.length, 4);
  t.equal(JOB_LINKS.length, 2);
  t.equal(JOB_EXECS.length, 2);
  t.equal(JOB_RESOURCES, 20);
  for (const f of JOB_FILES) t.match(f.content("h-7"), /host = h-7\n/);
  t.equal(hostName(0), "host-01");
});

t.test("this project's module passes the state service's parser", async (t) => {
  const m = parseModule(orchModule("peers", "/srv/peers"), "peers");
  t.equal(m.resources.length, 20);
  t.same([...new Set(m.resources.map((r) => r.type))].sort(), ["directory", "exec", "file", "symlink"]);
});

t.test("every tool's template renders the same text for a host", async (t) => {
  const mod = JSON.parse(orchModule("peers", "/srv/peers")) as { resources: { id: string; content?: string }[] };
  const templates = ansibleTemplates();
  const manifest = puppetManifest("host-03", "/r/host-03");
  for (const f of JOB_FILES) {
    const want = f.content("host-03");
    t.equal(mod.resources.find((r) => r.id === f.id)!.content!.replaceAll(ORCH_HOST, "host-03"), want);
    t.equal(templates.get(`${f.id}.j2`)!.replaceAll(ANSIBLE_HOST, "host-03"), want);
    // Puppet: a double-quoted string interpolating ${host}, with \n escapes.
    t.ok(manifest.includes(JSON.stringify(f.content("${host}"))), f.id);
  }
  t.match(manifest, /^\$host = 'host-03'$/m);
  t.match(manifest, /^\$root = '\/r\/host-03'$/m);
});

t.test("ansible: the inventory is local, the playbook has the 20 tasks without facts", async (t) => {
  const inv = JSON.parse(ansibleInventory([{ name: "host-01", root: "/r/host-01" }]));
  t.same(inv.all.hosts["host-01"], {
    ansible_connection: "local",
    ansible_python_interpreter: "/usr/bin/python3",
    peer_host: "host-01",
    peer_root: "/r/host-01",
  });
  const [play] = JSON.parse(ansiblePlaybook("/t"));
  t.equal(play.gather_facts, false);
  t.equal(play.tasks.length, 20);
  t.same(play.tasks.filter((x: { command?: { creates?: string } }) => x.command?.creates).length, 2);
});

t.test("the recap and puppet's events are counted per host", async (t) => {
  const out = [
    "TASK [x] ***",
    "PLAY RECAP *********",
    "host-01                    : ok=20   changed=1    unreachable=0    failed=0    skipped=0",
    "host-02                    : ok=19   changed=0    unreachable=0    failed=1    skipped=0",
    "",
  ].join("\n");
  t.same(parseRecap(out), [
    { host: "host-01", ok: 20, changed: 1, unreachable: 0, failed: 0 },
    { host: "host-02", ok: 19, changed: 0, unreachable: 0, failed: 1 },
  ]);
  t.same(parseRecap("no recap"), []);
  const puppet = [
    "Notice: Compiled catalog for vm in environment production in 0.38 seconds",
    "Notice: /Stage[main]/Main/File[/r/conf]/ensure: created",
    "Notice: /Stage[main]/Main/File[/r/conf/a]/content: current_value '{sha256}1', should be '{sha256}2' (noop)",
    "Notice: Class[Main]: Would have triggered 'refresh' from 1 event",
    "Error: Facter: Permission denied @ rb_sysopen - /proc/1/environ",
  ].join("\n");
  t.equal(puppetEvents(puppet), 2);
});

t.test("expected changes: all on the first apply, none after, one on the edited host", async (t) => {
  t.equal(expectedChanges("first apply", "host-02", "host-01", 20), 20);
  t.equal(expectedChanges("second apply", "host-01", "host-01", 20), 0);
  t.equal(expectedChanges("dry run", "host-01", "host-01", 20), 0);
  t.equal(expectedChanges("drift detection", "host-01", "host-01", 20), 1);
  t.equal(expectedChanges("drift detection", "host-02", "host-01", 20), 0);
});

t.test("options: host counts and tools, in a fixed column order", async (t) => {
  t.same(parsePeersOptions([]), { hosts: [10, 50], tools: ["orch", "ansible", "puppet"] });
  t.same(parsePeersOptions(["--hosts", "2", "--tools", "puppet,orch"]), { hosts: [2], tools: ["orch", "puppet"] });
  t.throws(() => parsePeersOptions(["--hosts", "0"]), /--hosts/);
  t.throws(() => parsePeersOptions(["--hosts", "2,x"]), /--hosts/);
  t.throws(() => parsePeersOptions(["--tools", "chef"]), /--tools/);
  t.throws(() => parsePeersOptions(["--agents", "5"]));
});
