import { access, constants } from "node:fs/promises";
import { onlyKeys, optStr, state, str } from "../spec.js";
import { budget, run, type RunResult } from "../proc.js";
import { SpecError, UnsupportedError, type Provider, type ProviderContext, type Spec } from "../types.js";

const FIELDS = ["name", "state", "version"];
const QUERY_MS = 60_000;
const INSTALL_MS = 15 * 60_000;

type Want = { name: string; state: "present" | "absent" | "latest"; version: string | undefined };

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  // Names go to the package manager as arguments (never through a shell); refuse option-like or odd ones.
  if (!/^[A-Za-z0-9][A-Za-z0-9.+_:@-]*$/.test(name)) throw new SpecError(`field "name" is not a valid package name`);
  const version = optStr(spec, "version");
  if (version !== undefined && !/^[A-Za-z0-9.+~:_*-]+$/.test(version))
    throw new SpecError(`field "version" is not a valid version`);
  const s = state(spec, ["present", "absent", "latest"] as const, "present");
  if (version !== undefined && s !== "present") throw new SpecError(`field "version" only applies to state present`);
  return { name, state: s, version };
}

/** The installed version, null when not installed. */
interface Installed {
  version: string | null;
}

/** One package manager family: read-only queries for plan, commands for apply. */
export interface Manager {
  name: string;
  installed(pkg: string, ctx: ProviderContext): Promise<Installed>;
  /** Whether a newer version than the installed one is available (for state latest). */
  upgradable(pkg: string, ctx: ProviderContext): Promise<string | null>;
  install(pkg: string, version: string | undefined, ctx: ProviderContext): Promise<RunResult>;
  remove(pkg: string, ctx: ProviderContext): Promise<RunResult>;
}

const onPath = async (bin: string) => {
  for (const dir of ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"]) {
    if (
      await access(`${dir}/${bin}`, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  return false;
};

const q = (args: string[], ctx: ProviderContext, env?: Record<string, string>) =>
  run(args[0]!, args.slice(1), { timeoutMs: budget(QUERY_MS, ctx.deadline), env });
const x = (args: string[], ctx: ProviderContext, env?: Record<string, string>) =>
  run(args[0]!, args.slice(1), { timeoutMs: budget(INSTALL_MS, ctx.deadline), env });

function queryFailed(what: string, r: RunResult): Error {
  return new Error(
    `${what} failed: ${r.spawnError ?? (r.timedOut ? "timed out" : `exit ${r.code}`)}${r.stderr ? `: ${r.stderr.trim().slice(0, 500)}` : ""}`,
  );
}

const APT_ENV = { DEBIAN_FRONTEND: "noninteractive", APT_LISTCHANGES_FRONTEND: "none" };

const apt: Manager = {
  name: "apt",
  async installed(pkg, ctx) {
    const r = await q(["dpkg-query", "-W", "-f=${db:Status-Status}\t${Version}\n", pkg], ctx);
    if (r.code === 1) return { version: null }; // never known to dpkg
    if (r.code !== 0) throw queryFailed("dpkg-query", r);
    const [status, version] = (r.stdout.split("\n")[0] ?? "").split("\t");
    return { version: status === "installed" ? (version ?? "") : null };
  },
  async upgradable(pkg, ctx) {
    const r = await q(["apt-cache", "policy", pkg], ctx);
    if (r.code !== 0) throw queryFailed("apt-cache policy", r);
    const inst = /Installed:\s*(\S+)/.exec(r.stdout)?.[1];
    const cand = /Candidate:\s*(\S+)/.exec(r.stdout)?.[1];
    return cand && cand !== "(none)" && cand !== inst ? cand : null;
  },
  install: (pkg, version, ctx) =>
    x(
      [
        "apt-get",
        "install",
        "-y",
        "-q",
        "-o",
        "Dpkg::Options::=--force-confdef",
        "-o",
        "Dpkg::Options::=--force-confold",
        version ? `${pkg}=${version}` : pkg,
      ],
      ctx,
      APT_ENV,
    ),
  remove: (pkg, ctx) => x(["apt-get", "remove", "-y", "-q", pkg], ctx, APT_ENV),
};

const dnf: Manager = {
  name: "dnf",
  async installed(pkg, ctx) {
    const r = await q(["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}\n", pkg], ctx);
    if (r.code === 1) return { version: null };
    if (r.code !== 0) throw queryFailed("rpm -q", r);
    return { version: r.stdout.split("\n")[0] ?? "" };
  },
  async upgradable(pkg, ctx) {
    // check-update: 100 = updates available, 0 = none.
    const r = await q(["dnf", "-q", "check-update", pkg], ctx);
    if (r.code === 0) return null;
    if (r.code === 100) return /\S+\s+(\S+)/.exec(r.stdout.trim())?.[1] ?? "newer";
    throw queryFailed("dnf check-update", r);
  },
  install: (pkg, version, ctx) => x(["dnf", "install", "-y", "-q", version ? `${pkg}-${version}` : pkg], ctx),
  remove: (pkg, ctx) => x(["dnf", "remove", "-y", "-q", pkg], ctx),
};

const apk: Manager = {
  name: "apk",
  async installed(pkg, ctx) {
    const r = await q(["apk", "list", "--installed", pkg], ctx);
    if (r.code !== 0) throw queryFailed("apk list", r);
    const line = r.stdout.split("\n").find((l) => l.startsWith(`${pkg}-`));
    if (!line) return { version: null };
    return { version: (line.split(" ")[0] ?? "").slice(pkg.length + 1) };
  },
  async upgradable(pkg, ctx) {
    const r = await q(["apk", "list", "--upgradable", pkg], ctx);
    if (r.code !== 0) throw queryFailed("apk list", r);
    const line = r.stdout.split("\n").find((l) => l.startsWith(`${pkg}-`));
    return line ? (line.split(" ")[0] ?? "").slice(pkg.length + 1) : null;
  },
  install: (pkg, version, ctx) => x(["apk", "add", "-q", version ? `${pkg}=${version}` : pkg], ctx),
  remove: (pkg, ctx) => x(["apk", "del", "-q", pkg], ctx),
};

/** The first family whose tools are present; detected once per agent. */
export async function detectManager(): Promise<Manager | null> {
  if ((await onPath("dpkg-query")) && (await onPath("apt-get"))) return apt;
  if ((await onPath("rpm")) && (await onPath("dnf"))) return dnf;
  if (await onPath("apk")) return apk;
  return null;
}

/** `1.2*` matches by prefix; anything else must equal the installed version. */
const versionMatches = (installed: string, want: string) =>
  want.endsWith("*") ? installed.startsWith(want.slice(0, -1)) : installed === want;

async function plan(
  m: Manager,
  w: Want,
  ctx: ProviderContext,
): Promise<{ diff: string; observed: Record<string, unknown> }> {
  const cur = await m.installed(w.name, ctx);
  const observed = { manager: m.name, installed: cur.version !== null, version: cur.version ?? "" };
  if (w.state === "absent") return { diff: cur.version !== null ? `remove ${w.name} ${cur.version}\n` : "", observed };
  if (cur.version === null) return { diff: `install ${w.name}${w.version ? ` ${w.version}` : ""}\n`, observed };
  if (w.state === "present") {
    if (w.version === undefined || versionMatches(cur.version, w.version)) return { diff: "", observed };
    return { diff: `change ${w.name} ${cur.version} -> ${w.version}\n`, observed };
  }
  const newer = await m.upgradable(w.name, ctx);
  return { diff: newer ? `upgrade ${w.name} ${cur.version} -> ${newer}\n` : "", observed };
}

export function packageProvider(detect: () => Promise<Manager | null> = detectManager): Provider {
  let manager: Promise<Manager | null> | undefined;
  const get = async () => {
    manager ??= detect();
    const m = await manager;
    if (!m) throw new UnsupportedError("no supported package manager found (apt/dpkg, dnf/rpm or apk)");
    return m;
  };
  return {
    async check(spec, ctx) {
      const w = parse(spec);
      const m = await get();
      const p = await plan(m, w, ctx);
      return { changed: p.diff !== "", diff: p.diff, observed: p.observed };
    },
    async apply(spec, ctx) {
      const w = parse(spec);
      const m = await get();
      const p = await plan(m, w, ctx);
      if (!p.diff) return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: p.observed };
      const r = w.state === "absent" ? await m.remove(w.name, ctx) : await m.install(w.name, w.version, ctx);
      const ok = !r.spawnError && !r.timedOut && r.code === 0;
      const after = await m.installed(w.name, ctx);
      return {
        changed: true,
        failed: !ok,
        diff: p.diff,
        message: ok
          ? p.diff.trim()
          : `${m.name} ${r.spawnError ? `could not start: ${r.spawnError}` : r.timedOut ? "timed out" : `exited with code ${r.code}`}`,
        stdout: r.stdout,
        stderr: r.stderr,
        observed: { manager: m.name, installed: after.version !== null, version: after.version ?? "" },
      };
    },
  };
}
