#!/usr/bin/env node
// Renders the bus permissions in deploy/nats/permissions.mjs into NATS server configuration:
//
//   deploy/nats/accounts.conf                 authorization block, passwords from env variables
//                                             NATS_PASSWORD_<SERVICE> (production, Kubernetes)
//   deploy/k8s/components/nats/accounts.conf  the same file where kustomize's configMapGenerator
//                                             can read it (it only reads inside the component)
//   deploy/nats/local.conf                    the same users with fixed development passwords,
//                                             for `nats-server -c deploy/nats/local.conf -js`
//
// and, at run time, the configuration of the development buses: `npm run up` (random passwords
// kept in .orch/bus) and the kit's test servers (packages/kit/src/testing), see renderDevConf.
//
// Usage: node deploy/nats/generate.mjs          write the files
//        node deploy/nats/generate.mjs --check  exit 1 if any file is stale
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { INBOX, JETSTREAM_ROLES, SERVICES, USERS } from "./permissions.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = join(here, "..", "..");

/** Environment variable that carries a service's bus password into the NATS server. */
export const passwordEnv = (service) => `NATS_PASSWORD_${service.toUpperCase()}`;
/** Development password of a service in local.conf (never used outside a developer machine). */
export const devPassword = (service) => `orch-dev-${service}`;

const uniq = (xs) => [...new Set(xs)];

/** Rejects malformed subject patterns: empty tokens, `>` anywhere but last, wildcards inside tokens. */
export function checkSubject(pattern) {
  const tokens = pattern.split(".");
  tokens.forEach((t, i) => {
    if (t === "") throw new Error(`subject ${JSON.stringify(pattern)}: empty token`);
    if (t === ">" && i !== tokens.length - 1)
      throw new Error(`subject ${JSON.stringify(pattern)}: '>' must be the last token`);
    if (t.length > 1 && /[*>\s]/.test(t))
      throw new Error(`subject ${JSON.stringify(pattern)}: wildcard or space inside token ${JSON.stringify(t)}`);
  });
  return pattern;
}

/** True when some concrete subject matches both patterns. */
export function overlaps(a, b) {
  const x = a.split(".");
  const y = b.split(".");
  for (let i = 0; ; i++) {
    const p = x[i];
    const q = y[i];
    if (p === ">" || q === ">") return !!(p !== undefined && q !== undefined);
    if (p === undefined || q === undefined) return p === q;
    if (p !== "*" && q !== "*" && p !== q) return false;
  }
}

/** True when the concrete subject `subject` matches `pattern`. */
export function matches(pattern, subject) {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (s[i] === undefined) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return s.length === p.length;
}

/** The NATS permissions object of one user, expanded from its entry in USERS. */
export function permissionsFor(name) {
  const u = USERS[name];
  if (!u) throw new Error(`unknown bus user ${name}`);
  const roles = u.jetstream.map((r) => {
    const role = JETSTREAM_ROLES[r];
    if (!role) throw new Error(`${name}: unknown jetstream role ${r}`);
    return role;
  });
  const needsInbox = u.requests.length > 0 || roles.length > 0;
  const publish = uniq([...u.requests, ...u.publish, ...roles.flatMap((r) => r.publish)]);
  const subscribe = uniq([
    ...u.serves,
    ...u.subscribe,
    ...roles.flatMap((r) => r.subscribe),
    ...(needsInbox ? [INBOX(name)] : []),
  ]);
  for (const s of [...publish, ...subscribe, ...u.deny.publish, ...u.deny.subscribe]) checkSubject(s);
  return {
    publish: { allow: publish, deny: uniq(u.deny.publish) },
    subscribe: { allow: subscribe, deny: uniq(u.deny.subscribe) },
    allowResponses: u.serves.length > 0 || roles.some((r) => r.responses === true),
  };
}

/**
 * Would the server let `user` publish (or subscribe to) the concrete subject? Mirrors NATS:
 * deny wins over allow. Replies under allow_responses are not modelled (they depend on traffic).
 */
export function allowed(user, action, subject) {
  const p = permissionsFor(user)[action];
  if (p.deny.some((d) => matches(d, subject))) return false;
  return p.allow.some((a) => matches(a, subject));
}

/** Consistency of the data: every user is a service, every request has someone who serves it. */
export function lint() {
  const problems = [];
  const names = Object.keys(USERS);
  for (const s of SERVICES) if (!names.includes(s)) problems.push(`service ${s} has no bus user`);
  for (const n of names) if (!SERVICES.includes(n)) problems.push(`bus user ${n} is not a service`);
  for (const n of names) {
    try {
      permissionsFor(n);
    } catch (err) {
      problems.push(err.message);
      continue;
    }
    for (const r of USERS[n].requests) {
      const servers = names.filter((m) => USERS[m].serves.some((s) => overlaps(s, r)));
      if (servers.length === 0) problems.push(`${n} requests ${r} but no service serves it`);
    }
  }
  return problems;
}

const q = (s) => JSON.stringify(s);
const list = (xs, indent) =>
  xs.length === 0 ? "[]" : `[\n${xs.map((x) => `${indent}  ${q(x)}`).join("\n")}\n${indent}]`;

/**
 * The `authorization { users: [...] }` block with the given password expression per service, plus
 * `extraUsers` ({ name, password, note }) without permissions, i.e. allowed everything: only the
 * test harness's probe user, never a deployment file.
 */
export function renderAuthorization(password, extraUsers = []) {
  const users = Object.keys(USERS).map((name) => {
    const p = permissionsFor(name);
    const i = "        ";
    const lines = [
      `    # ${name}: ${USERS[name].note}`,
      "    {",
      `      user: ${q(name)}`,
      `      password: ${password(name)}`,
      "      permissions: {",
      `        publish: {`,
      `          allow: ${list(p.publish.allow, `${i}  `)}`,
      ...(p.publish.deny.length ? [`          deny: ${list(p.publish.deny, `${i}  `)}`] : []),
      "        }",
      "        subscribe: {",
      `          allow: ${list(p.subscribe.allow, `${i}  `)}`,
      ...(p.subscribe.deny.length ? [`          deny: ${list(p.subscribe.deny, `${i}  `)}`] : []),
      "        }",
      ...(p.allowResponses ? ["        allow_responses: true"] : []),
      "      }",
      "    }",
    ];
    return lines.join("\n");
  });
  for (const u of extraUsers) {
    if (USERS[u.name]) throw new Error(`extra bus user ${u.name} would shadow the service's own user`);
    users.push(`    # ${u.name}: ${u.note}\n    {\n      user: ${q(u.name)}\n      password: ${q(u.password)}\n    }`);
  }
  return `authorization {\n  users: [\n${users.join("\n")}\n  ]\n}\n`;
}

const HEADER = "# GENERATED by deploy/nats/generate.mjs from deploy/nats/permissions.mjs: do not edit.\n";

export function renderAccountsConf() {
  return (
    HEADER +
    "# Bus users and their permissions. Included by the NATS server configuration (see\n" +
    "# deploy/k8s/components/nats/nats.conf). Each password comes from the server's environment:\n" +
    Object.keys(USERS)
      .map((n) => `#   ${passwordEnv(n)}  password of user ${n}`)
      .join("\n") +
    "\n\n" +
    renderAuthorization((n) => `$${passwordEnv(n)}`)
  );
}

export function renderLocalConf() {
  return (
    HEADER +
    "# Local development and tests ONLY: the production users and permissions with fixed passwords\n" +
    `# (user <service>, password ${q(devPassword("<service>"))}).\n` +
    "#   nats-server -c deploy/nats/local.conf -a 127.0.0.1 -p 4222 -js -sd .orch/nats\n" +
    "# Services then connect with ORCH_NATS_USER=<service> ORCH_NATS_PASSWORD=orch-dev-<service>.\n" +
    "# Works with nats-server 2.9 (Debian) and later; JetStream is switched on by the flags above.\n\n" +
    renderAuthorization((n) => q(devPassword(n)))
  );
}

/** A fresh random password for each service's bus user (keeps the ones in `existing`). */
export function randomPasswords(existing = {}) {
  return Object.fromEntries(SERVICES.map((s) => [s, existing[s] || randomBytes(24).toString("base64url")]));
}

/**
 * A development server's configuration: the production users and permissions (the same
 * authorization block as accounts.conf) with the given passwords, one per service. Written with
 * mode 0600 by its callers: it holds the passwords in the clear.
 */
export function renderDevConf(passwords, extraUsers = []) {
  for (const s of SERVICES)
    if (typeof passwords[s] !== "string" || passwords[s].length < 16)
      throw new Error(`bus user ${s} has no password (at least 16 characters)`);
  return (
    HEADER +
    "# Development bus (npm run up, tests): the production users and permissions with random passwords.\n\n" +
    renderAuthorization((n) => q(passwords[n]), extraUsers)
  );
}

/** Every generated file, path relative to the repository root → content. */
export function generatedFiles() {
  const problems = lint();
  if (problems.length) throw new Error(`bus permissions are inconsistent:\n  ${problems.join("\n  ")}`);
  const accounts = renderAccountsConf();
  return {
    "deploy/nats/accounts.conf": accounts,
    "deploy/k8s/components/nats/accounts.conf": accounts,
    "deploy/nats/local.conf": renderLocalConf(),
  };
}

/** Paths whose content on disk differs from what the generator produces. */
export function staleFiles(root = REPO_ROOT) {
  return Object.entries(generatedFiles())
    .filter(([path, content]) => {
      try {
        return readFileSync(join(root, path), "utf8") !== content;
      } catch {
        return true;
      }
    })
    .map(([path]) => path);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes("--check")) {
    const stale = staleFiles();
    if (stale.length) {
      process.stderr.write(`stale (run node deploy/nats/generate.mjs): ${stale.join(", ")}\n`);
      process.exit(1);
    }
  } else {
    for (const [path, content] of Object.entries(generatedFiles())) {
      writeFileSync(join(REPO_ROOT, path), content);
      process.stdout.write(`wrote ${relative(process.cwd(), join(REPO_ROOT, path)) || path}\n`);
    }
  }
}
