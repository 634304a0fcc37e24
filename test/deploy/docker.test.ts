// The image, checked without a Docker engine: the Dockerfile's structure (lib/dockerfile.ts), the
// `orch` entrypoint script (run with dash, Debian's /bin/sh), the runtime-tree assembler, and
// .dockerignore.
import { execFile } from "node:child_process";
import {
  accessSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { validate as dockerfileSyntax } from "dockerfile-utils";
import { nodeFlagsFor } from "@orch/kit/bulk-gc";
import { lintDockerfile, parseDockerfile, stages } from "./lib/dockerfile.js";
import { repoPath } from "./lib/kustomize.js";

const run = promisify(execFile);
const DOCKERFILE = repoPath("deploy", "docker", "Dockerfile");
const ORCH = repoPath("deploy", "docker", "orch");
const SHELL = existsSync("/usr/bin/dash") ? "/usr/bin/dash" : "/bin/sh";

t.test("deploy/docker/Dockerfile meets the image policy", async (t) => {
  const text = readFileSync(DOCKERFILE, "utf8");
  t.same(lintDockerfile(text), []);
  const all = stages(parseDockerfile(text));
  t.ok(all.length >= 3, `multi-stage (${all.map((s) => s.name).join(", ")})`);
  const final = all.at(-1)!;
  const pinned = readFileSync(new URL("../../.node-version", import.meta.url), "utf8").trim();
  t.equal(final.image, `node:${pinned}-bookworm-slim`, "runtime on the pinned Node LTS (.node-version), bookworm-slim");
  t.equal(final.instructions.filter((i) => i.keyword === "USER").at(-1)?.args, "10001:10001", "runs as uid 10001");
  t.match(
    final.instructions.find((i) => i.keyword === "ENTRYPOINT")?.args ?? "",
    /^\["\/usr\/bin\/tini", "--", "orch"\]$/,
    "entrypoint is orch under tini (PID 1 reaps orphaned git helpers)",
  );
  t.ok(
    final.instructions.some((i) => i.keyword === "RUN" && /\bgit\b/.test(i.args) && /\btini\b/.test(i.args)),
    "the runtime has git (git sources) and tini",
  );
  const runs = all.flatMap((s) => s.instructions.filter((i) => i.keyword === "RUN").map((i) => i.args));
  t.ok(
    runs.some((r) => /\bnpm ci\b/.test(r) && !/--omit/.test(r)),
    "npm ci installs the build dependencies",
  );
  t.ok(
    runs.some((r) => /\bnpm run build\b/.test(r)),
    "npm run build",
  );
  t.ok(
    runs.some((r) => /\bnpm prune --omit=dev\b/.test(r)),
    "dev dependencies pruned before assembling",
  );
  const buildStages = all.filter((s) => s.instructions.some((i) => i.keyword === "RUN" && /npm ci/.test(i.args)));
  t.ok(
    buildStages.some((s) =>
      s.instructions.some((i) => /python3/.test(i.args) && /g\+\+/.test(i.args) && /\bmake\b/.test(i.args)),
    ),
    "build tools for node-pty where npm ci runs",
  );
  // Files the Dockerfile uses from the context exist and are not excluded by .dockerignore.
  for (const f of ["deploy/docker/assemble.mjs", "deploy/docker/orch", "package.json", "package-lock.json"]) {
    t.ok(existsSync(repoPath(f)), `${f} exists`);
    t.notOk(dockerIgnored(f), `${f} is in the build context`);
  }
  accessSync(ORCH, constants.X_OK);
});

t.test("Dockerfile syntax (dockerfile-utils, the VS Code Docker language service's validator)", async (t) => {
  const diagnostics = (text: string) => dockerfileSyntax(text).map((d) => `${d.range.start.line + 1}: ${d.message}`);
  t.same(diagnostics(readFileSync(DOCKERFILE, "utf8")), [], "no syntax problems");
  const broken = diagnostics("FROM node:20.20.2-bookworm-slim\nCOPY --frm=build /out /app\nRUNN true\n");
  t.ok(
    broken.some((d) => /Unknown flag: frm/.test(d)),
    "a misspelt flag is reported",
  );
  t.ok(
    broken.some((d) => /Unknown instruction: RUNN/.test(d)),
    "an unknown instruction is reported",
  );
});

t.test("broken Dockerfile fixture: each problem is reported", async (t) => {
  const problems = lintDockerfile(readFileSync(repoPath("test", "deploy", "fixtures", "broken", "Dockerfile"), "utf8"));
  const rules = problems.map((p) => p.rule);
  for (const rule of [
    "multi-stage",
    "base-image-tag",
    "non-root-user",
    "prod-deps-only",
    "entrypoint",
    "no-build-tools-in-runtime",
  ] as const) {
    t.ok(rules.includes(rule), `${rule}: ${problems.find((p) => p.rule === rule)?.message ?? "not reported"}`);
  }
  t.match(problems.find((p) => p.rule === "base-image-tag")?.message ?? "", /latest/);
  t.match(
    problems.find((p) => p.rule === "non-root-user")?.message ?? "",
    /not numeric/,
    "USER root is not a numeric uid",
  );
});

t.test("Dockerfile lint details", async (t) => {
  const lint = (s: string) => lintDockerfile(s).map((p) => p.rule);
  const good = [
    "ARG IMG=node:20.20.2-bookworm-slim",
    "FROM ${IMG} AS build",
    "RUN npm ci && \\",
    "    npm run build && \\",
    "    npm prune --omit=dev",
    "FROM ${IMG}",
    "COPY --from=build /app /app",
    "USER 10001",
    'ENTRYPOINT ["orch"]',
  ].join("\n");
  t.same(lint(good), [], "continuation lines and ARG defaults are understood");
  t.ok(lint(good.replace("USER 10001", "USER 0")).includes("non-root-user"), "USER 0 is root");
  t.ok(
    lint(good.replace("USER 10001", "USER node")).includes("non-root-user"),
    "USER by name is not enough for runAsNonRoot",
  );
  t.ok(lint(good.replace("USER 10001\n", "")).includes("non-root-user"), "no USER means root");
  t.ok(lint(good.replace("node:20.20.2-bookworm-slim", "node")).includes("base-image-tag"), "untagged base");
  t.ok(lint(good.replace("    npm prune --omit=dev", "    true")).includes("prod-deps-only"), "no prune");
  t.ok(
    lint(good.replace("COPY --from=build", "FROM ${IMG} AS deps\nRUN npm ci\nFROM ${IMG}\nCOPY --from=deps")).includes(
      "prod-deps-only",
    ),
    "copying from a stage with dev deps",
  );
});

t.test("orch entrypoint dispatches to services, the agent and the CLI", async (t) => {
  const app = mkdtempSync(join(tmpdir(), "orch-app-"));
  t.teardown(() => rmSync(app, { recursive: true, force: true }));
  const main = (path: string) => {
    mkdirSync(join(app, dirname(path)), { recursive: true });
    writeFileSync(
      join(app, path),
      `console.log(JSON.stringify({ main: ${JSON.stringify(path)}, argv: process.argv.slice(2), flags: process.execArgv }));\n`,
    );
  };
  for (const s of ["gateway", "auth", "agents", "terminal"]) main(`services/${s}/dist/main.js`);
  main("agent/dist/main.js");
  main("cli/dist/main.js");
  const orch = (...args: string[]) =>
    run(SHELL, [ORCH, ...args], { env: { PATH: process.env.PATH ?? "", ORCH_APP_DIR: app } }).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e) => ({ code: e.code as number, stdout: String(e.stdout), stderr: String(e.stderr) }),
    );

  await run(SHELL, ["-n", ORCH]);
  let r = await orch("gateway", "--flag", "x y");
  t.same(
    JSON.parse(r.stdout),
    {
      main: "services/gateway/dist/main.js",
      argv: ["--flag", "x y"],
      flags: ["--enable-source-maps", ...nodeFlagsFor("gateway")],
    },
    "orch gateway → services/gateway/dist/main.js with its arguments",
  );
  // The node flags of each command are the kit's (nodeFlagsFor), streaming processes and others.
  for (const [cmd, proc] of [
    ["gateway", "gateway"],
    ["agents", "agents"],
    ["terminal", "terminal"],
    ["auth", "auth"],
    ["agent", "agent"],
    ["orch-agent", "agent"],
    ["orchctl", "orchctl"],
  ] as const) {
    const flags = (JSON.parse((await orch(cmd)).stdout) as { flags: string[] }).flags;
    t.same(flags, ["--enable-source-maps", ...nodeFlagsFor(proc)], `orch ${cmd}: node ${flags.join(" ")}`);
  }
  r = await orch("agents");
  t.same(JSON.parse(r.stdout).main, "services/agents/dist/main.js");
  r = await orch("agent", "--data-dir", "/var/lib/orch-agent");
  t.same(
    JSON.parse(r.stdout),
    {
      main: "agent/dist/main.js",
      argv: ["--data-dir", "/var/lib/orch-agent"],
      flags: ["--enable-source-maps", ...nodeFlagsFor("agent")],
    },
    "orch agent → the agent daemon",
  );
  r = await orch("orchctl", "status");
  t.same(JSON.parse(r.stdout).main, "cli/dist/main.js", "orch orchctl → the CLI");
  r = await orch("help");
  t.equal(r.code, 0);
  t.match(r.stdout, /gateway/);
  t.match(r.stdout, /auth/);
  t.match(r.stdout, /agent /);
  r = await orch();
  t.equal(r.code, 0, "no command prints help");
  r = await orch("nosuch");
  t.equal(r.code, 64, "unknown service: exit 64");
  t.match(r.stderr, /unknown command: nosuch/);
  r = await orch("../../etc");
  t.equal(r.code, 64, "no path tricks");
  t.match(r.stderr, /invalid command/);
});

t.test("assemble.mjs keeps runtime files, drops sources and tests", async (t) => {
  const { assemble } = (await import("../../deploy/docker/assemble.mjs")) as {
    assemble: (out: string, root: string) => string[];
  };
  const root = mkdtempSync(join(tmpdir(), "orch-repo-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const file = (p: string, content = "x") => {
    mkdirSync(join(root, dirname(p)), { recursive: true });
    writeFileSync(join(root, p), content);
  };
  file("package.json", JSON.stringify({ name: "r", workspaces: ["packages/*", "services/*", "agent"] }));
  file("package-lock.json", "{}");
  file("packages/kit/package.json", "{}");
  file("packages/kit/src/index.ts");
  file("packages/kit/dist/index.js");
  file("packages/kit/dist/index.js.map");
  file("packages/kit/dist/index.d.ts");
  file("packages/kit/tsconfig.json");
  file("services/auth/package.json", "{}");
  file("services/auth/dist/main.js");
  file("services/auth/migrations/001_init.sql");
  file("services/auth/test/auth.test.ts");
  file("services/auth/tsconfig.tsbuildinfo");
  file("agent/package.json", "{}");
  file("agent/dist/main.js");
  file("node_modules/dep/index.js");
  file("notes/readme.md");
  mkdirSync(join(root, "node_modules", "@orch"), { recursive: true });
  symlinkSync("../../services/auth", join(root, "node_modules", "@orch", "auth"));

  const out = join(root, "out");
  t.same(assemble(out, root), ["packages/kit", "services/auth", "agent"], "workspaces from package.json");
  const has = (p: string) => existsSync(join(out, p));
  for (const p of [
    "package.json",
    "package-lock.json",
    "bin",
    "node_modules/dep/index.js",
    "packages/kit/dist/index.js",
    "packages/kit/dist/index.js.map",
    "services/auth/dist/main.js",
    "services/auth/migrations/001_init.sql",
    "agent/dist/main.js",
  ]) {
    t.ok(has(p), `keeps ${p}`);
  }
  for (const p of [
    "packages/kit/src",
    "packages/kit/dist/index.d.ts",
    "packages/kit/tsconfig.json",
    "services/auth/test",
    "services/auth/tsconfig.tsbuildinfo",
    "notes",
  ]) {
    t.notOk(has(p), `drops ${p}`);
  }
  const link = join(out, "node_modules", "@orch", "auth");
  t.ok(
    lstatSync(link).isSymbolicLink() && readlinkSync(link) === "../../services/auth",
    "workspace links stay relative",
  );
  t.ok(existsSync(join(link, "dist", "main.js")), "and resolve inside the assembled tree");
});

/** Minimal .dockerignore matcher (patterns as used in this repository: globs with * and **). */
function dockerIgnored(path: string): boolean {
  const patterns = readFileSync(repoPath(".dockerignore"), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  let ignored = false;
  for (const p of patterns) {
    const negate = p.startsWith("!");
    const glob = (negate ? p.slice(1) : p).replace(/\/$/, "");
    const re = new RegExp(
      "^" +
        glob
          .split("/")
          .map((seg) =>
            seg === "**"
              ? "(?:.*)"
              : seg
                  .replace(/[.+^${}()|[\]\\]/g, "\\$&")
                  .replace(/\*/g, "[^/]*")
                  .replace(/\?/g, "[^/]"),
          )
          .join("/")
          .replace(/\(\?:\.\*\)\//g, "(?:.*/)?") +
        "(?:/.*)?$",
    );
    if (re.test(path)) ignored = !negate;
  }
  return ignored;
}

t.test(".dockerignore keeps the context small and secret-free", async (t) => {
  for (const p of [
    "node_modules/x/index.js",
    "services/auth/node_modules/x",
    "packages/kit/dist/index.js",
    ".git/config",
    ".env",
    "services/auth/test/a.test.ts",
    "test/e2e/x.test.ts",
  ]) {
    t.ok(dockerIgnored(p), `${p} is excluded`);
  }
  for (const p of [
    "services/auth/src/main.ts",
    "services/auth/migrations/001.sql",
    "proto/orch/v1/auth.proto",
    "packages/kit/src/testing/index.ts",
    "buf.gen.yaml",
    "turbo.json",
  ]) {
    t.notOk(dockerIgnored(p), `${p} is in the context`);
  }
});
