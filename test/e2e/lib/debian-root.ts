import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, open, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

// A real Debian bookworm root for the install tests, made once with debootstrap and cached (a cold
// build takes ~30 s and needs deb.debian.org; later runs reuse it). Each test gets an overlayfs on
// top of the cache, so whatever a test installs never reaches the cache.

const run = promisify(execFile);
const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** What the cached root is made of; a stamp that does not match means rebuild. */
const RECIPE = {
  suite: "bookworm",
  variant: "minbase",
  include: ["curl", "ca-certificates", "openssl"],
  mirror: "http://deb.debian.org/debian",
};
const STAMP = ".orch-test-root.json";

export function debianRootDir(): string {
  return resolve(process.env.ORCH_TEST_DEBIAN_ROOT ?? join(REPO, ".cache", "debian-root"));
}

export interface DebianRoot {
  dir: string;
  /** Seconds debootstrap took in this process; undefined when the cache was reused (warm). */
  builtSeconds: number | undefined;
}

async function stampOk(dir: string): Promise<boolean> {
  try {
    const s = JSON.parse(await readFile(join(dir, STAMP), "utf8"));
    return JSON.stringify(s.recipe) === JSON.stringify(RECIPE);
  } catch {
    return false;
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** An exclusive lock file holding our pid; a lock whose holder died is taken over. */
async function lock(file: string, timeoutMs: number): Promise<() => Promise<void>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fh = await open(file, "wx");
      await fh.writeFile(String(process.pid));
      await fh.close();
      return () => rm(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number((await readFile(file, "utf8").catch(() => "")).trim());
      if (!holder || !alive(holder)) {
        await rm(file, { force: true });
        continue;
      }
      if (Date.now() > until) throw new Error(`${file} is held by pid ${holder}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * The cached root, built when missing: debootstrap into a temp sibling, then renamed into place,
 * under a lock so two test processes never build at once.
 */
export async function ensureDebianRoot(opts: { log?: (msg: string) => void } = {}): Promise<DebianRoot> {
  const dir = debianRootDir();
  if (await stampOk(dir)) return { dir, builtSeconds: undefined };
  await mkdir(dirname(dir), { recursive: true });
  const unlock = await lock(`${dir}.lock`, 15 * 60_000);
  try {
    if (await stampOk(dir)) return { dir, builtSeconds: undefined };
    const tmp = await mkdtemp(`${dir}.building-`);
    const t0 = Date.now();
    opts.log?.(`debootstrap ${RECIPE.suite} into ${tmp} (cold build)`);
    await run(
      "debootstrap",
      [`--variant=${RECIPE.variant}`, `--include=${RECIPE.include.join(",")}`, RECIPE.suite, tmp, RECIPE.mirror],
      { maxBuffer: 64 * 1024 * 1024, timeout: 15 * 60_000 },
    );
    const seconds = (Date.now() - t0) / 1000;
    assertNoNode(tmp);
    await writeFile(
      join(tmp, STAMP),
      `${JSON.stringify({ recipe: RECIPE, built_at: new Date().toISOString(), seconds })}\n`,
    );
    if (existsSync(dir)) await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
    return { dir, builtSeconds: seconds };
  } finally {
    await unlock();
  }
}

/** The point of the test is an agent that needs no Node.js on the machine: the root has none. */
export function assertNoNode(root: string): void {
  for (const p of ["usr/bin/node", "usr/local/bin/node", "usr/bin/nodejs", "bin/node"])
    if (existsSync(join(root, p))) throw new Error(`${join(root, p)} exists: the Debian root must have no Node.js`);
}

export interface Overlay {
  /** The merged root to chroot into. */
  root: string;
  close(): Promise<void>;
}

const OVERLAY_PREFIX = "orch-root-";

/** Overlays left mounted by a test process that was killed before its teardown ran (e.g. a timeout). */
async function sweepStaleOverlays(tmpParent: string): Promise<void> {
  const mounts = await readFile("/proc/self/mounts", "utf8").catch(() => "");
  for (const line of mounts.split("\n")) {
    const target = line.split(" ")[1] ?? "";
    const m = new RegExp(`^(${tmpParent}/${OVERLAY_PREFIX}(\\d+)-[^/]+)/merged$`).exec(target);
    if (!m || alive(Number(m[2]))) continue;
    await run("umount", ["-l", target]).catch(() => undefined);
    await rm(m[1]!, { recursive: true, force: true });
  }
}

/** A writable copy-on-write view of the cached root; close() unmounts and deletes the changes. */
export async function overlayRoot(lower: string, tmpParent = "/tmp"): Promise<Overlay> {
  await sweepStaleOverlays(tmpParent);
  const base = await mkdtemp(join(tmpParent, `${OVERLAY_PREFIX}${process.pid}-`));
  const [upper, work, root] = ["upper", "work", "merged"].map((d) => join(base, d)) as [string, string, string];
  for (const d of [upper, work, root]) await mkdir(d);
  await run("mount", ["-t", "overlay", "overlay", "-o", `lowerdir=${lower},upperdir=${upper},workdir=${work}`, root]);
  let closed = false;
  return {
    root,
    async close() {
      if (closed) return;
      closed = true;
      // Lazy: a process still holding a file in the root must not leave the mount behind.
      await run("umount", ["-l", root]).catch(() => undefined);
      await rm(base, { recursive: true, force: true });
    },
  };
}
