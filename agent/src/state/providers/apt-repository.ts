import { stat } from "node:fs/promises";
import { join } from "node:path";
import {
  ARMORED_PUBLIC_KEY_RE,
  ARMORED_PUBLIC_KEY_RULE,
  REPOSITORY_NAME_RE,
  REPOSITORY_NAME_RULE,
} from "@orch/contracts";
import { absPath, onlyKeys, optBool, optStr, state, str, words } from "../spec.js";
import { budget, run } from "../proc.js";
import {
  SpecError,
  UnsupportedError,
  type ApplyResult,
  type Provider,
  type ProviderContext,
  type Spec,
} from "../types.js";
import { applyFiles, checkFiles, managedHeader, type OwnedFile } from "./owned-files.js";

const FIELDS = [
  "name",
  "uris",
  "suites",
  "components",
  "types",
  "architectures",
  "key",
  "signed_by",
  "enabled",
  "update",
  "state",
];
const UPDATE_MS = 10 * 60_000;

export interface AptRepositoryOptions {
  /** apt's configuration directory (default /etc/apt): sources.list.d/ and keyrings/ under it. */
  aptDir?: string | undefined;
  /** The apt-get that refreshes the package lists (default apt-get on PATH). */
  aptGet?: string | undefined;
}

interface Want {
  name: string;
  state: "present" | "absent";
  update: boolean;
  files: OwnedFile[];
  sources: string;
}

/** A deb822 `.sources` file (sources.list(5)), and the key it is signed by when the module ships it. */
function parse(spec: Spec, aptDir: string): Want {
  onlyKeys(spec, FIELDS);
  const name = str(spec, "name");
  if (!REPOSITORY_NAME_RE.test(name)) throw new SpecError(`field "name" ${REPOSITORY_NAME_RULE}`);
  const st = state(spec, ["present", "absent"] as const, "present");
  const sources = join(aptDir, "sources.list.d", `${name}.sources`);
  const keyPath = join(aptDir, "keyrings", `${name}.asc`);
  const key = optStr(spec, "key");
  if (st === "absent")
    // The key file is this resource's own (named after it): it goes too.
    return {
      name,
      state: st,
      update: false,
      sources,
      files: [
        { path: sources, next: null },
        { path: keyPath, next: null },
      ],
    };
  const types = words(spec, "types", false) ?? ["deb"];
  if (types.some((t) => t !== "deb" && t !== "deb-src")) throw new SpecError(`field "types" must be deb or deb-src`);
  const signedBy = spec.signed_by === undefined ? undefined : absPath(spec, "signed_by");
  if (key !== undefined && signedBy !== undefined) throw new SpecError(`give at most one of "key" and "signed_by"`);
  if (key !== undefined && !ARMORED_PUBLIC_KEY_RE.test(key))
    throw new SpecError(`field "key" ${ARMORED_PUBLIC_KEY_RULE}`);
  const enabled = optBool(spec, "enabled") ?? true;
  const fields: Array<[string, string[] | undefined]> = [
    ["Types", types],
    ["URIs", words(spec, "uris", true)],
    ["Suites", words(spec, "suites", true)],
    ["Components", words(spec, "components", false)],
    ["Architectures", words(spec, "architectures", false)],
    ["Signed-By", key !== undefined ? [keyPath] : signedBy !== undefined ? [signedBy] : undefined],
    ["Enabled", enabled ? undefined : ["no"]],
  ];
  const text = [
    managedHeader("apt_repository"),
    ...fields.filter(([, v]) => v).map(([k, v]) => `${k}: ${v!.join(" ")}`),
    "",
  ].join("\n");
  const files: OwnedFile[] = [{ path: sources, next: text }];
  // A key the module ships; with none, a key file this resource wrote earlier is removed.
  files.unshift({ path: keyPath, next: key === undefined ? null : `${key.trim()}\n`, makeDir: true });
  return { name, state: st, update: optBool(spec, "update") ?? true, files, sources };
}

/**
 * Refreshes the package lists of this one source only (apt's documented way: point sourcelist at
 * the file and turn the parts directory off), so a broken unrelated source does not fail it.
 */
async function updateLists(w: Want, aptGet: string, ctx: ProviderContext) {
  return run(
    aptGet,
    [
      "update",
      "-o",
      `Dir::Etc::sourcelist=${w.sources}`,
      "-o",
      "Dir::Etc::sourceparts=-",
      "-o",
      "APT::Get::List-Cleanup=0",
    ],
    { timeoutMs: budget(UPDATE_MS, ctx.deadline), env: { DEBIAN_FRONTEND: "noninteractive", LC_ALL: "C" } },
  );
}

export function aptRepositoryProvider(opts: AptRepositoryOptions = {}): Provider {
  const aptDir = opts.aptDir ?? "/etc/apt";
  const aptGet = opts.aptGet ?? "apt-get";
  const requireApt = async () => {
    const st = await stat(join(aptDir, "sources.list.d")).catch(() => null);
    if (!st?.isDirectory())
      throw new UnsupportedError(`${aptDir}/sources.list.d does not exist (is this a Debian-based system?)`);
  };
  return {
    async check(spec) {
      const w = parse(spec, aptDir);
      await requireApt();
      const r = await checkFiles(w.files);
      const then = r.changed && w.update && w.state === "present" ? `# then: apt-get update (this source only)\n` : "";
      return { ...r, diff: r.diff + then };
    },
    async apply(spec, ctx) {
      const w = parse(spec, aptDir);
      await requireApt();
      return applyRepository(w, aptGet, ctx);
    },
  };
}

async function applyRepository(w: Want, aptGet: string, ctx: ProviderContext): Promise<ApplyResult> {
  const r = await applyFiles(w.files);
  if (!r.changed || !w.update || w.state === "absent") return r;
  const u = await updateLists(w, aptGet, ctx);
  // apt-get update exits 0 when a source it fetched before now fails (a bad signature keeps the
  // old lists, with a "W:" line): with this source alone in the run, any warning or error is its.
  const complaint = u.stderr.split("\n").find((l) => /^[WE]: /.test(l));
  const ok = u.code === 0 && complaint === undefined;
  return {
    ...r,
    stdout: u.stdout,
    stderr: u.stderr,
    failed: !ok,
    message: ok
      ? `${r.message}, package lists updated`
      : u.code === 0
        ? `${r.message}; apt-get update of this source failed: ${complaint!.slice(3)}`
        : `${r.message}; apt-get update exited with ${u.code ?? (u.timedOut ? "no code (timed out)" : (u.spawnError ?? u.signal))}`,
  };
}
