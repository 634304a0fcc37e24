import type { Stats } from "node:fs";
import { chmod, chown, mkdir, rm, rmdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { sha256OfFile } from "../../blobs/file-digest.js";
import { attrChanges, observeAttrs, resolveOwner } from "../ownership.js";
import { absPath, onlyKeys, optBool, optStr } from "../spec.js";
import { SpecError, UnsupportedError, type BlobFiles, type CheckResult, type Provider, type Spec } from "../types.js";
import { capped, driftOf } from "./archive-drift.js";
import { extractTo, extrasIn, makeTemp, placeInto, removeExtras } from "./archive-extract.js";
import { loadRecord, saveRecord, type ArchiveRecord } from "./archive-record.js";
import { optSource, type Source } from "./file-source.js";
import { lstatOrNull } from "../lstat.js";

// `archive`: a blob (tar, tar.gz or zip) extracted into a directory, read with @orch/kit/archive
// (the same rules as a module bundle upload). Idempotent by the blob's digest: the agent records
// what it extracted (archive-record.ts), and a check compares the tree with that record.

const FIELDS = ["path", "source", "owner", "group", "clean"];
const NEW_DIR_MODE = 0o755;

interface Want {
  path: string;
  source: Source;
  owner: string | undefined;
  group: string | undefined;
  clean: boolean;
}

function parse(spec: Spec): Want {
  onlyKeys(spec, FIELDS);
  const source = optSource(spec);
  if (source === undefined) throw new SpecError(`field "source" is required: the blob digest of the archive`);
  const w: Want = {
    path: absPath(spec),
    source,
    owner: optStr(spec, "owner"),
    group: optStr(spec, "group"),
    clean: optBool(spec, "clean") ?? false,
  };
  if (w.path === "/") throw new SpecError(`field "path" must not be /`);
  return w;
}

interface Plan {
  st: Stats | null;
  record: ArchiveRecord | undefined;
  /** The whole archive is extracted again: new digest, no record, or the tree drifted. */
  extract: boolean;
  /** `clean`: paths not the archive's, known only when the recorded archive is the wanted one. */
  extras: string[];
  /** The destination directory's own owner/group differ. */
  rootAttrs: boolean;
  lines: string[];
}

const changed = (p: Plan) => p.extract || p.extras.length > 0 || p.rootAttrs;

async function plan(w: Want, blobs: BlobFiles, records: string): Promise<Plan> {
  const st = await lstatOrNull(w.path);
  if (st && !st.isDirectory())
    throw new SpecError(`${w.path} exists and is a ${st.isSymbolicLink() ? "symlink" : "file"}, not a directory`);
  const ids = await resolveOwner(w);
  const size = await cachedSize(blobs, w.source.digest);
  const next = `${w.source.digest}${size === undefined ? "" : ` (${size} bytes)`}`;
  const owner = [w.owner && `owner ${w.owner}`, w.group && `group ${w.group}`].filter(Boolean).join(", ");
  if (!st)
    return {
      st,
      record: undefined,
      extract: true,
      extras: [],
      rootAttrs: false,
      lines: [`create directory (mode 0755${owner ? `, ${owner}` : ""})`, `archive (none) -> ${next}`],
    };
  const record = await loadRecord(records, w.path);
  const rootLines = await attrChanges(st, w, ids);
  const lines = [...rootLines];
  let extract = true;
  if (!record) lines.push(`archive (none) -> ${next}`);
  else if (record.digest !== w.source.digest)
    lines.push(`archive ${record.digest} (${record.entries.length} entries) -> ${next}`);
  else {
    const drift = await driftOf(w.path, record.entries, ids, w);
    extract = drift.length > 0;
    lines.push(...capped(drift));
  }
  let extras: string[] = [];
  if (w.clean && !extract && record) {
    extras = await extrasIn(w.path, record.entries);
    lines.push(...capped(extras.map((e) => `remove ${e}`)));
  } else if (w.clean && extract) lines.push("remove whatever is not the archive's (clean)");
  return { st, record, extract, extras, rootAttrs: rootLines.length > 0, lines };
}

/** The cached blob's size, or undefined when the cache does not hold it (yet: plans run before shipping). */
async function cachedSize(blobs: BlobFiles, digest: string): Promise<number | undefined> {
  const file = await blobs.path(digest);
  if (file === undefined) return undefined;
  return (await stat(file).catch(() => undefined))?.size;
}

/**
 * The cached blob, hashed again before it is read: the cache verified it when it arrived, but the
 * file could have changed since. A mismatch drops it so that the next apply sends it again.
 */
async function verifiedBlob(w: Want, blobs: BlobFiles): Promise<string> {
  const file = await blobs.path(w.source.digest);
  if (file === undefined)
    throw new SpecError(`blob ${w.source.digest} is not in this agent's cache: the server sends it before an apply`);
  const actual = await sha256OfFile(file);
  if (actual !== w.source.digest) {
    await blobs.discard(w.source.digest);
    throw new SpecError(
      `the cached blob ${w.source.digest} does not match its digest (its bytes hash to ${actual}); ${w.path} was left as it was, and the blob was dropped from the cache so that the next apply sends it again`,
    );
  }
  return file;
}

/** Creates `path` and its missing parents (0755); returns those it created, outermost first. */
async function makeDestination(path: string): Promise<string[]> {
  const missing: string[] = [];
  for (let p = path; !(await lstatOrNull(p)); p = dirname(p)) missing.unshift(p);
  for (const p of missing) await mkdir(p, { mode: NEW_DIR_MODE });
  return missing;
}

async function enforce(w: Want, p: Plan, blobs: BlobFiles, records: string): Promise<string> {
  const ids = await resolveOwner(w);
  if (ids.missing.length) throw new SpecError(`${ids.missing.join(" and ")} does not exist`);
  const owned = ids.uid !== undefined || ids.gid !== undefined;
  let entries = p.record?.entries ?? [];
  let created: string[] = [];
  let removed = 0;
  if (p.extract) {
    const file = await verifiedBlob(w, blobs);
    created = await makeDestination(w.path);
    let tmp: string | undefined;
    try {
      tmp = await makeTemp(w.path);
      entries = await extractTo(tmp, file, w.source.digest, w.path, ids);
    } catch (e) {
      // Refused (or failed) before the destination changed: what this apply created goes too.
      for (const d of [...created].reverse()) await rmdir(d).catch(() => {});
      throw e;
    }
    try {
      await placeInto(tmp, w.path, entries, ids);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    if (w.clean) {
      const extras = await extrasIn(w.path, entries);
      await removeExtras(w.path, extras);
      removed = extras.length;
    }
  } else if (p.extras.length) {
    await removeExtras(w.path, p.extras);
    removed = p.extras.length;
  }
  if (owned) await chown(w.path, ids.uid ?? -1, ids.gid ?? -1);
  for (const d of created) await chmod(d, NEW_DIR_MODE); // mkdir's mode is filtered by the umask
  if (p.extract) await saveRecord(records, { version: 1, path: w.path, digest: w.source.digest, entries });
  const done = [
    p.extract && `extracted ${entries.length} entries`,
    removed > 0 && `removed ${removed} not in the archive`,
    !p.extract && p.rootAttrs && "attributes updated",
  ].filter(Boolean);
  return done.join(", ");
}

async function observe(path: string, records: string): Promise<Record<string, unknown>> {
  const st = await lstatOrNull(path);
  if (!st) return { exists: false };
  if (!st.isDirectory()) return { exists: true, kind: st.isSymbolicLink() ? "symlink" : "other" };
  const record = await loadRecord(records, path);
  return {
    exists: true,
    ...(await observeAttrs(st)),
    ...(record ? { digest: record.digest, entries: record.entries.length } : {}),
  };
}

export interface ArchiveProviderDeps {
  /** Where archives are read from: the agent's blob cache. */
  blobs: BlobFiles;
  /** Where extractions are recorded (archive-record.ts); undefined: this agent has no data directory. */
  records: string | undefined;
}

export function archiveProvider(deps: ArchiveProviderDeps): Provider {
  const records = () => {
    if (deps.records === undefined) throw new UnsupportedError("archive resources need the agent's data directory");
    return deps.records;
  };
  return {
    async check(spec): Promise<CheckResult> {
      const w = parse(spec);
      const p = await plan(w, deps.blobs, records());
      return {
        changed: changed(p),
        diff: changed(p) ? p.lines.map((l) => `${l}\n`).join("") : "",
        observed: await observe(w.path, records()),
      };
    },
    async apply(spec) {
      const w = parse(spec);
      const dir = records();
      const p = await plan(w, deps.blobs, dir);
      if (!changed(p))
        return { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: await observe(w.path, dir) };
      const message = await enforce(w, p, deps.blobs, dir);
      const diff = p.lines.map((l) => `${l}\n`).join("");
      return { changed: true, diff, message, stdout: "", stderr: "", observed: await observe(w.path, dir) };
    },
  };
}
