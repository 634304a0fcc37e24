import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { parseModule } from "../src/module/parse.js";

// Upload-time validation of the line / block / cron resource types: every refusal names the YAML path and line.

const mod = (resources: string) => `name: files\nresources:\n${resources}`;

function refuse(t: Test, content: string, reason: string, path: string, line: number, message: RegExp): void {
  try {
    parseModule(content, "files");
    t.fail(`expected ${reason} at ${path}`);
  } catch (err) {
    t.type(err, OrchError);
    const e = err as OrchError;
    t.equal(e.code, "INVALID_ARGUMENT");
    t.equal(e.reason, reason);
    t.equal(e.details.path, path);
    t.equal(e.details.line, line, `${path} at line ${line}`);
    t.match(e.message, new RegExp(`^${path.replace(/[[\].]/g, "\\$&")} \\(line ${line}\\): `));
    t.match(e.message, message);
  }
}

t.test("good line, block and cron resources parse, templates allowed in checked fields", async (t) => {
  const m = parseModule(
    mod(`  - id: root-login
    type: line
    path: /etc/ssh/sshd_config
    line: PermitRootLogin no
    match: "^#?PermitRootLogin"
    insert_after: "^#?Port "
  - { id: no-telnet, type: line, path: /etc/inetd.conf, match: "^telnet", state: absent }
  - { id: banner, type: line, path: /etc/issue, line: "{{ attributes.hostname }}", create: true, insert_before: BOF }
  - id: hosts
    type: block
    path: /etc/hosts
    content: |
      10.0.0.1 db
      10.0.0.2 cache
    marker: "# {mark} orch hosts"
    insert_before: "^::1"
  - { id: old-hosts, type: block, path: /etc/hosts, marker: "# {mark} old", state: absent }
  - id: backup
    type: cron
    name: backup
    schedule: "30 2 * * mon-fri"
    command: /usr/local/bin/backup --quiet
    user: backup
    env: { MAILTO: ops@example.com, RETRIES: 3 }
  - { id: boot, type: cron, name: boot-note, schedule: "@reboot", command: logger booted }
  - { id: gone, type: cron, name: old-job, state: absent }
  - { id: tmpl, type: cron, name: "{{ tags.job }}", schedule: "{{ tags.schedule }}", command: "true", state: present }
`),
    "files",
  );
  t.same(
    m.resources.map((r) => r.type),
    ["line", "line", "line", "block", "block", "cron", "cron", "cron", "cron"],
  );
  t.same(m.resources[5]!.spec, {
    name: "backup",
    schedule: "30 2 * * mon-fri",
    command: "/usr/local/bin/backup --quiet",
    user: "backup",
    env: { MAILTO: "ops@example.com", RETRIES: 3 },
  });
});

t.test("line: a bad regexp, a multi-line line, missing fields, two placements", async (t) => {
  const head = "  - id: a\n    type: file\n    path: /x\n";
  refuse(
    t,
    mod(`${head}  - id: l\n    type: line\n    path: /etc/x\n    line: y\n    match: "(["\n`),
    "invalid_module",
    "resources[1].match",
    10,
    /must be a valid regular expression/,
  );
  refuse(
    t,
    mod(`  - { id: l, type: line, path: /etc/x, line: y,\n      insert_after: "a(" }\n`),
    "invalid_module",
    "resources[0].insert_after",
    4,
    /valid regular expression/,
  );
  refuse(
    t,
    mod(`  - { id: l, type: line, path: /etc/x, line: "a\\nb" }\n`),
    "invalid_module",
    "resources[0].line",
    3,
    /must be one line/,
  );
  refuse(
    t,
    mod("  - { id: l, type: line, path: /etc/x }\n"),
    "invalid_module",
    "resources[0].line",
    3,
    /line is required unless state is absent/,
  );
  refuse(
    t,
    mod("  - { id: l, type: line, path: /etc/x, state: absent }\n"),
    "invalid_module",
    "resources[0].match",
    3,
    /needs match or line/,
  );
  refuse(
    t,
    mod("  - { id: l, type: line, path: /etc/x, line: y, insert_after: a, insert_before: b }\n"),
    "invalid_module",
    "resources[0].insert_before",
    3,
    /at most one of insert_after and insert_before/,
  );
  refuse(
    t,
    mod("  - { id: l, type: line, path: etc/x, line: y }\n"),
    "invalid_module",
    "resources[0].path",
    3,
    /absolute path/,
  );
});

t.test("block: a marker without {mark}, missing content, unknown field", async (t) => {
  refuse(
    t,
    mod("  - id: b\n    type: block\n    path: /etc/x\n    content: y\n    marker: '# managed'\n"),
    "invalid_module",
    "resources[0].marker",
    7,
    /must contain \{mark\}/,
  );
  refuse(
    t,
    mod("  - { id: b, type: block, path: /etc/x }\n"),
    "invalid_module",
    "resources[0].content",
    3,
    /content is required/,
  );
  refuse(
    t,
    mod("  - id: b\n    type: block\n    path: /etc/x\n    content: y\n    block: z\n"),
    "invalid_module",
    "resources[0].block",
    7,
    /unknown field 'block'/,
  );
});

t.test("cron: a bad schedule, name, command, user or env names its field and line", async (t) => {
  const ok = "  - { id: a, type: cron, name: a, schedule: '@daily', command: 'true' }\n";
  const cron = (fields: string) =>
    mod(
      `${ok}  - { id: b, type: cron, name: b, schedule: '@daily', command: 'true' }\n  - id: c\n    type: cron\n${fields}`,
    );
  refuse(
    t,
    cron("    name: c\n    schedule: '61 * * * *'\n    command: 'true'\n"),
    "invalid_module",
    "resources[2].schedule",
    8,
    /minute 61 is out of range 0-59/,
  );
  refuse(
    t,
    cron("    name: c\n    schedule: '* * *'\n    command: 'true'\n"),
    "invalid_module",
    "resources[2].schedule",
    8,
    /must be 5 fields/,
  );
  refuse(
    t,
    cron("    name: c\n    schedule: '@fortnightly'\n    command: 'true'\n"),
    "invalid_module",
    "resources[2].schedule",
    8,
    /'@fortnightly' is not one of @reboot/,
  );
  refuse(
    t,
    cron("    name: c\n    schedule: '0 0 * * sunday'\n    command: 'true'\n"),
    "invalid_module",
    "resources[2].schedule",
    8,
    /day-of-week 'sunday'/,
  );
  refuse(
    t,
    cron("    name: backup.sh\n    schedule: '@daily'\n    command: 'true'\n"),
    "invalid_module",
    "resources[2].name",
    7,
    /1-64 characters of A-Z.*cron ignores other file names/,
  );
  refuse(
    t,
    cron("    name: c\n    schedule: '@daily'\n    command: \"a\\nb\"\n"),
    "invalid_module",
    "resources[2].command",
    9,
    /must be one line/,
  );
  refuse(
    t,
    cron("    name: c\n    schedule: '@daily'\n    command: 'true'\n    user: 'two words'\n"),
    "invalid_module",
    "resources[2].user",
    10,
    /must be a user name/,
  );
  refuse(
    t,
    cron("    name: c\n    schedule: '@daily'\n    command: 'true'\n    env: { BAD-KEY: x }\n"),
    "invalid_module",
    "resources[2].env.BAD-KEY",
    10,
    /environment variable name/,
  );
  refuse(t, cron("    name: c\n    command: 'true'\n"), "invalid_module", "resources[2].schedule", 5, /is required/);
});

t.test("cron: a secret may not reach the command line or the world-readable file", async (t) => {
  refuse(
    t,
    mod(
      "  - id: c\n    type: cron\n    name: c\n    schedule: '@daily'\n    command: 'curl -u x:{{ secrets.tok }} h'\n",
    ),
    "secret_in_argument",
    "resources[0].command",
    7,
    /must not be rendered into 'command'/,
  );
  refuse(
    t,
    mod(
      "  - id: c\n    type: cron\n    name: c\n    schedule: '@daily'\n    command: 'true'\n    env: { T: '{{ secrets.tok }}' }\n",
    ),
    "invalid_module",
    "resources[0].env",
    8,
    /readable by every local user/,
  );
});
