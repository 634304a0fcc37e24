import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { parseModule } from "../src/module/parse.js";
import { triggerKeys } from "../src/module/triggers.js";

// The system types in the module schema: what parses, and each refusal with its reason, path and line.
const KEY = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ\n-----END PGP PUBLIC KEY BLOCK-----\n";
const mod = (resources: string, version = 1) => `version: ${version}\nname: sys\nresources:\n${resources}`;
const refuse = (t: Test, content: string, reason: string, path: string, line: number, message: RegExp) => {
  try {
    parseModule(content, "sys");
    t.fail(`expected ${reason}`);
  } catch (err) {
    t.type(err, OrchError);
    const e = err as OrchError;
    t.equal(e.reason, reason, e.message);
    t.equal(e.details.path, path);
    t.equal(e.details.line, line, `${reason} at line ${line}`);
    t.match(e.message, message);
  }
};

t.test("sysctl, apt_repository, yum_repository and systemd_unit parse", async (t) => {
  const m = parseModule(
    mod(`  - { id: fwd, type: sysctl, name: net.ipv4.ip_forward, value: 1 }
  - { id: swappy, type: sysctl, name: vm.swappiness, value: "{{ tags.swappiness }}", persist: false }
  - id: apt
    type: apt_repository
    name: nginx
    uris: https://nginx.org/packages/debian
    suites: [bookworm]
    components: nginx
    key: ${JSON.stringify(KEY)}
  - { id: yum, type: yum_repository, name: nginx, baseurl: "https://nginx.org/packages/rhel/9/$basearch/", gpgkey: https://nginx.org/keys/nginx_signing.key }
  - id: unit
    type: systemd_unit
    name: web@blue.service
    content: "[Service]\\nExecStart=/usr/bin/web\\n"
    state: running
    enabled: true
`),
    "sys",
  );
  t.same(
    m.resources.map((r) => r.type),
    ["sysctl", "sysctl", "apt_repository", "yum_repository", "systemd_unit"],
  );
});

t.test("each refusal names the field and its line", async (t) => {
  refuse(
    t,
    mod("  - { id: s, type: sysctl, name: ip_forward, value: 1 }"),
    "invalid_module",
    "resources[0].name",
    4,
    /must be a kernel parameter/,
  );
  refuse(
    t,
    mod("  - { id: s, type: sysctl, name: net.ipv4.ip_forward }"),
    "invalid_module",
    "resources[0].value",
    4,
    /value is required unless state is absent/,
  );
  refuse(
    t,
    mod('  - { id: s, type: sysctl, name: a.b, value: "1\\n2" }'),
    "invalid_module",
    "resources[0].value",
    4,
    /one line/,
  );
  refuse(
    t,
    mod("  - { id: a, type: apt_repository, name: x, suites: stable }"),
    "invalid_module",
    "resources[0].uris",
    4,
    /uris is required/,
  );
  refuse(
    t,
    mod("  - { id: a, type: apt_repository, name: x, uris: u, suites: s, key: nope }"),
    "invalid_module",
    "resources[0].key",
    4,
    /ASCII-armored OpenPGP public key/,
  );
  refuse(
    t,
    mod(
      `  - { id: a, type: apt_repository, name: x, uris: u, suites: s, key: ${JSON.stringify(KEY)}, signed_by: /k.gpg }`,
    ),
    "invalid_module",
    "resources[0].signed_by",
    4,
    /at most one of key and signed_by/,
  );
  refuse(
    t,
    mod("  - { id: a, type: apt_repository, name: x, uris: u, suites: s, types: rpm }"),
    "invalid_module",
    "resources[0].types",
    4,
    /deb/,
  );
  refuse(
    t,
    mod('  - { id: y, type: yum_repository, name: "a b", baseurl: u }'),
    "invalid_module",
    "resources[0].name",
    4,
    /must be 1-64 characters/,
  );
  refuse(
    t,
    mod("  - { id: y, type: yum_repository, name: ab }"),
    "invalid_module",
    "resources[0].baseurl",
    4,
    /one of baseurl, mirrorlist or metalink/,
  );
  refuse(
    t,
    mod("  - { id: u, type: systemd_unit, name: web, content: x }"),
    "invalid_module",
    "resources[0].name",
    4,
    /must be a unit file name/,
  );
  refuse(
    t,
    mod("  - { id: u, type: systemd_unit, name: web.service, state: reloaded, content: x }"),
    "invalid_module",
    "resources[0].state",
    4,
    /running|stopped|absent/,
  );
});

t.test("a secret is refused in every field of the files every local user reads", async (t) => {
  refuse(
    t,
    mod(
      '  - { id: u, type: systemd_unit, name: web.service, content: "[Service]\\nEnvironment=PW={{ secrets.pw }}\\n" }',
    ),
    "invalid_module",
    "resources[0].content",
    4,
    /EnvironmentFile=/,
  );
  refuse(
    t,
    mod('  - { id: s, type: sysctl, name: a.b, value: "{{ secrets.v }}" }'),
    "invalid_module",
    "resources[0].value",
    4,
    /readable by every local user/,
  );
  refuse(
    t,
    mod('  - { id: a, type: apt_repository, name: x, uris: "https://u:{{ secrets.pw }}@h/", suites: s }'),
    "invalid_module",
    "resources[0].uris",
    4,
    /auth\.conf\.d/,
  );
  refuse(
    t,
    mod('  - { id: s, type: sysctl, name: "{{ secrets.k }}", value: 1 }'),
    "secret_in_argument",
    "resources[0].name",
    4,
    /process argument/,
  );
  // Version 2: any read of a secret, not only the plain form.
  refuse(
    t,
    mod('  - { id: u, type: systemd_unit, name: web.service, content: "{% if secrets.pw %}x{% endif %}" }', 2),
    "invalid_template",
    "resources[0].content",
    4,
    /secrets\.pw/,
  );
});

t.test("a systemd_unit can be notified, and is sent triggered_by like a service", async (t) => {
  const m = parseModule(
    mod(
      `  - { id: conf, type: file, path: /etc/web.conf, content: x, notify: unit }
  - { id: unit, type: systemd_unit, name: web.service, content: x, state: running, refresh: reload }
`,
      2,
    ),
    "sys",
  );
  t.same(triggerKeys(m, "sys", "unit"), { triggeredBy: ["sys/conf"] });
  refuse(
    t,
    mod(
      "  - { id: s, type: sysctl, name: a.b, value: 1 }\n  - { id: t, type: sysctl, name: a.c, value: 1, watch: s }",
      2,
    ),
    "invalid_module",
    "resources[1].watch",
    5,
    /cannot be refreshed/,
  );
});
