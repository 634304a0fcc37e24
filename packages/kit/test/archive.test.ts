import t, { type Test } from "tap";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ARCHIVE_LIMITS,
  ArchiveError,
  type ArchiveEntry,
  type ArchiveErrorCode,
  type ArchiveLimits,
  detectArchiveFormat,
  readArchive,
} from "@orch/kit/archive";
import { entryPath, resolveLink } from "../src/archive/paths.js";

// Real archives: made by the system tar, gzip and zip from real trees, and by python3's tarfile and
// zipfile where an archive must hold what no tool writes from a real tree (".." names, absolute
// names, links out, bombs, lying headers).

const MiB = 1024 * 1024;

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "orch-archive-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const sh = (cmd: string, args: string[], cwd?: string) => execFileSync(cmd, args, { cwd, stdio: "pipe" });
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** What python3 writes (see MAKE): a tar, tar.gz or zip of exactly these entries. */
interface Crafted {
  name: string;
  kind?: "file" | "dir" | "sym" | "hard" | "fifo";
  data?: string;
  target?: string;
  /** Zip: the entry stored instead of deflated. */
  stored?: boolean;
}

const MAKE = `
import io, json, sys, tarfile, zipfile
spec = json.load(open(sys.argv[1]))
out, fmt = sys.argv[2], spec["format"]
if fmt in ("tar", "tar.gz"):
    with tarfile.open(out, "w:gz" if fmt == "tar.gz" else "w", format=tarfile.GNU_FORMAT) as tf:
        for e in spec["entries"]:
            ti = tarfile.TarInfo(e["name"])
            ti.mode = 0o755 if e.get("kind") == "dir" else 0o644
            kind = e.get("kind", "file")
            if kind == "file":
                data = e.get("data", "").encode()
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
                continue
            ti.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE}[kind]
            ti.linkname = e.get("target", "")
            tf.addfile(ti)
else:
    with zipfile.ZipFile(out, "w") as zf:
        for e in spec["entries"]:
            zi = zipfile.ZipInfo(e["name"])
            zi.create_system = 3
            kind = e.get("kind", "file")
            zi.compress_type = zipfile.ZIP_STORED if e.get("stored") else zipfile.ZIP_DEFLATED
            if kind == "sym":
                zi.external_attr = 0o120777 << 16
                zf.writestr(zi, e["target"])
            elif kind == "dir":
                zi.external_attr = (0o40755 << 16) | 0x10
                zf.writestr(zi, b"")
            else:
                zi.external_attr = 0o100644 << 16
                zf.writestr(zi, e.get("data", "").encode())
`;

function craft(dir: string, file: string, format: "tar" | "tar.gz" | "zip", entries: Crafted[]): string {
  const spec = join(dir, `${file}.json`);
  const script = join(dir, "make.py");
  writeFileSync(script, MAKE);
  writeFileSync(spec, JSON.stringify({ format, entries }));
  const out = join(dir, file);
  sh("python3", [script, spec, out]);
  return out;
}

/** Runs python3 with a script and arguments (the bombs and the byte-patched archives). */
const py = (dir: string, script: string, ...args: string[]) => {
  const f = join(dir, `p-${randomBytes(4).toString("hex")}.py`);
  writeFileSync(f, script);
  sh("python3", [f, ...args]);
};

interface Seen {
  kind: ArchiveEntry["kind"];
  path: string;
  mode?: number;
  size?: number;
  target?: string;
  sha?: string;
}

/** Every entry, each file's bytes read (or, with `read` false for a path, skipped). */
async function collect(
  file: string,
  opts: { limits?: Partial<ArchiveLimits>; read?: (path: string) => boolean } = {},
): Promise<Seen[]> {
  const out: Seen[] = [];
  for await (const e of readArchive(file, opts.limits)) {
    if (e.kind === "file") {
      const s: Seen = { kind: e.kind, path: e.path, mode: e.mode, size: e.size };
      if (opts.read?.(e.path) ?? true) {
        const parts: Uint8Array[] = [];
        for await (const c of e.stream()) parts.push(c);
        s.sha = sha(Buffer.concat(parts));
      }
      out.push(s);
    } else if (e.kind === "directory") out.push({ kind: e.kind, path: e.path, mode: e.mode });
    else out.push({ kind: e.kind, path: e.path, target: e.target });
  }
  return out;
}

/** Reads the whole archive and asserts it is refused with `code` at `entry`; returns the error. */
async function refused(
  t: Test,
  file: string,
  code: ArchiveErrorCode,
  entry: string | undefined,
  limits?: Partial<ArchiveLimits>,
): Promise<ArchiveError | undefined> {
  try {
    await collect(file, limits ? { limits } : {});
  } catch (e) {
    if (!(e instanceof ArchiveError)) {
      t.fail(`not an ArchiveError: ${(e as Error).stack}`);
      return undefined;
    }
    t.equal(e.code, code, `code (${e.message})`);
    t.equal(e.entry, entry, "entry");
    return e;
  }
  t.fail(`${file} was read without a refusal (expected ${code})`);
  return undefined;
}

const openFds = () => readdirSync("/proc/self/fd").length;

/** The fd count back at `before` (closing is asynchronous): at most a second. */
async function fdsBackTo(t: Test, before: number, what: string) {
  for (let i = 0; i < 100 && openFds() > before; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(openFds(), before, `no fd left open: ${what}`);
}

/** A tree made on disk: a/b/f.txt, a big random file, a relative link, an empty directory. */
function realTree(dir: string) {
  const src = join(dir, "src");
  mkdirSync(join(src, "a/b"), { recursive: true });
  mkdirSync(join(src, "empty"));
  writeFileSync(join(src, "a/b/f.txt"), "hello\n");
  const big = randomBytes(300_000);
  writeFileSync(join(src, "big.bin"), big);
  chmodSync(join(src, "big.bin"), 0o755);
  symlinkSync("b/f.txt", join(src, "a/link"));
  const want: Seen[] = [
    { kind: "directory", path: "a", mode: 0o755 },
    { kind: "directory", path: "a/b", mode: 0o755 },
    { kind: "file", path: "a/b/f.txt", mode: 0o644, size: 6, sha: sha(Buffer.from("hello\n")) },
    { kind: "symlink", path: "a/link", target: "b/f.txt" },
    { kind: "file", path: "big.bin", mode: 0o755, size: big.length, sha: sha(big) },
    { kind: "directory", path: "empty", mode: 0o755 },
  ];
  return { src, want };
}

const byPath = (a: Seen, b: Seen) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

t.test("formats by magic bytes", async (t) => {
  const tarHead = Buffer.alloc(512);
  tarHead.write("ustar", 257, "latin1");
  t.equal(detectArchiveFormat(tarHead), "tar");
  t.equal(detectArchiveFormat(Buffer.from([0x1f, 0x8b, 8, 0])), "tar.gz");
  t.equal(detectArchiveFormat(Buffer.from("PK\x03\x04rest", "latin1")), "zip");
  t.equal(detectArchiveFormat(Buffer.from("PK\x05\x06", "latin1")), "zip", "an empty zip");
  t.equal(detectArchiveFormat(Buffer.from("#!/bin/sh\n")), undefined);
  t.equal(detectArchiveFormat(new Uint8Array(0)), undefined);
  t.same(ARCHIVE_LIMITS, { maxEntries: 100_000, maxBytes: 1024 ** 3, maxRatio: 100 });

  const dir = scratch();
  writeFileSync(join(dir, "notes.txt"), "just text\n");
  await refused(t, join(dir, "notes.txt"), "unknown_format", undefined);
});

t.test("tar, tar.gz and zip made by the system tools read as the tree they were made from", async (t) => {
  const dir = scratch();
  const { src, want } = realTree(dir);
  sh("tar", ["cf", join(dir, "t.tar"), "-C", src, "."]);
  sh("tar", ["czf", join(dir, "t.tgz"), "-C", src, "."]);
  sh("zip", ["-qry", join(dir, "t.zip"), "."], src);
  // gzip of a tar made apart (a .tar.gz by another route), and tar's own names without "./".
  sh("tar", ["cf", join(dir, "plain.tar"), "-C", src, "a", "big.bin", "empty"]);
  sh("gzip", ["-k", join(dir, "plain.tar")]);
  for (const f of ["t.tar", "t.tgz", "t.zip", "plain.tar.gz"]) {
    const got = await collect(join(dir, f));
    t.same([...got].sort(byPath), want, f);
  }
});

t.test("an entry not read is skipped: the next ones read exactly", async (t) => {
  const dir = scratch();
  const { src } = realTree(dir);
  const later = randomBytes(200_000);
  writeFileSync(join(src, "later.bin"), later);
  sh("tar", ["czf", join(dir, "t.tgz"), "-C", src, "big.bin", "a", "later.bin"]);
  sh("zip", ["-qry", join(dir, "t.zip"), "big.bin", "a", "later.bin"], src);
  for (const f of ["t.tgz", "t.zip"]) {
    const got = await collect(join(dir, f), { read: (p) => p !== "big.bin" });
    t.equal(got.find((e) => e.path === "big.bin")?.sha, undefined, `${f}: big.bin skipped`);
    t.equal(got.find((e) => e.path === "later.bin")?.sha, sha(later), `${f}: the file after it`);
    t.equal(got.find((e) => e.path === "a/b/f.txt")?.sha, sha(Buffer.from("hello\n")), f);
  }
  // A file half read, then the consumer moves on: the rest is skipped, the next entry is exact.
  for (const f of ["t.tgz", "t.zip"]) {
    const seen: string[] = [];
    for await (const e of readArchive(join(dir, f))) {
      if (e.kind === "file" && e.path === "big.bin") for await (const _ of e.stream()) break;
      if (e.kind === "file" && e.path === "later.bin") {
        const parts: Uint8Array[] = [];
        for await (const c of e.stream()) parts.push(c);
        t.equal(sha(Buffer.concat(parts)), sha(later), `${f}: after a half-read file`);
      }
      seen.push(e.path);
    }
    t.ok(seen.includes("later.bin"), f);
  }
});

t.test("breaking out of the loop, or a refusal, closes the file", async (t) => {
  const dir = scratch();
  const { src } = realTree(dir);
  sh("tar", ["czf", join(dir, "t.tgz"), "-C", src, "."]);
  sh("tar", ["cf", join(dir, "t.tar"), "-C", src, "."]);
  sh("zip", ["-qry", join(dir, "t.zip"), "."], src);
  const bad = craft(dir, "bad.zip", "zip", [
    { name: "ok.txt", data: "fine" },
    { name: "../evil", data: "x" },
  ]);
  for (const f of ["t.tgz", "t.tar", "t.zip"]) {
    const before = openFds();
    for await (const e of readArchive(join(dir, f))) {
      if (e.kind !== "file") continue;
      for await (const _ of e.stream()) break; // mid-file, too
      break;
    }
    await fdsBackTo(t, before, `${f}, break`);
  }
  const before = openFds();
  await refused(t, bad, "unsafe_path", "../evil");
  await fdsBackTo(t, before, "after a refusal");
});

t.test("names that leave the tree are refused: '..', absolute, backslash, drive letters", async (t) => {
  const dir = scratch();
  for (const [format, ext] of [
    ["tar", "tar"],
    ["zip", "zip"],
  ] as const) {
    const dotdot = craft(dir, `dotdot.${ext}`, format, [
      { name: "ok.txt", data: "ok" },
      { name: "a/../../evil", data: "x" },
    ]);
    await refused(t, dotdot, "unsafe_path", "a/../../evil");
    const abs = craft(dir, `abs.${ext}`, format, [{ name: "/etc/evil", data: "x" }]);
    await refused(t, abs, "unsafe_path", "/etc/evil");
  }
  const backslash = craft(dir, "bs.zip", "zip", [{ name: "..\\..\\evil", data: "x" }]);
  await refused(t, backslash, "unsafe_path", "..\\..\\evil");
  const drive = craft(dir, "drive.zip", "zip", [{ name: "C:/evil", data: "x" }]);
  await refused(t, drive, "unsafe_path", "C:/evil");
  // A leading "./" and doubled slashes are only spelling.
  const dotted = craft(dir, "dotted.tar", "tar", [
    { name: "./", kind: "dir" },
    { name: "./x//y.txt", data: "y" },
  ]);
  t.same(await collect(dotted), [{ kind: "file", path: "x/y.txt", mode: 0o644, size: 1, sha: sha(Buffer.from("y")) }]);

  t.equal(entryPath("./a/./b/", false), "a/b");
  t.equal(entryPath("./", false), "", "the root itself");
  t.throws(() => entryPath("", false), { code: "unsafe_path" });
  t.throws(() => entryPath("a\0b", false), { code: "unsafe_path" });
  t.throws(() => entryPath("..", false), { code: "unsafe_path" });
  t.equal(entryPath("a\\b", false), "a\\b", "a backslash is a name character in a tar");
});

t.test("links: a target that leaves the tree is refused, however it gets there", async (t) => {
  const dir = scratch();
  for (const [format, ext] of [
    ["tar", "tar"],
    ["zip", "zip"],
  ] as const) {
    const out = craft(dir, `out.${ext}`, format, [
      { name: "d", kind: "dir" },
      { name: "d/up", kind: "sym", target: "../.." },
    ]);
    await refused(t, out, "unsafe_link", "d/up");
    const abs = craft(dir, `abs.${ext}`, format, [{ name: "passwd", kind: "sym", target: "/etc/passwd" }]);
    await refused(t, abs, "unsafe_link", "passwd");
    const fine = craft(dir, `fine.${ext}`, format, [
      { name: "lib/libx.so.1", data: "elf" },
      { name: "lib/libx.so", kind: "sym", target: "libx.so.1" },
      { name: "bin/x", kind: "sym", target: "../lib/./libx.so" },
    ]);
    t.same(
      (await collect(fine)).map((e) => [e.kind, e.path, e.target]),
      [
        ["file", "lib/libx.so.1", undefined],
        ["symlink", "lib/libx.so", "libx.so.1"],
        ["symlink", "bin/x", "../lib/./libx.so"],
      ],
      `${ext}: links inside the tree, as stored`,
    );
  }
  // Each link alone stays inside; through "x/l" (the root), "y" climbs above it.
  const chain = craft(dir, "chain.tar", "tar", [
    { name: "x", kind: "dir" },
    { name: "x/l", kind: "sym", target: ".." },
    { name: "y", kind: "sym", target: "x/l/.." },
  ]);
  await refused(t, chain, "unsafe_link", "y");
  // The same, the links in the other order: found once all links are known, after the last entry.
  const late = craft(dir, "late.tar", "tar", [
    { name: "y", kind: "sym", target: "x/l/.." },
    { name: "x", kind: "dir" },
    { name: "x/l", kind: "sym", target: ".." },
  ]);
  await refused(t, late, "unsafe_link", "y");
  // An entry written through a link lands wherever the link points.
  const through = craft(dir, "through.tar", "tar", [
    { name: "l", kind: "sym", target: "sub" },
    { name: "l/x", data: "x" },
  ]);
  await refused(t, through, "unsafe_path", "l/x");
  const loop = craft(dir, "loop.tar", "tar", [
    { name: "a", kind: "sym", target: "b" },
    { name: "b", kind: "sym", target: "a/c" },
  ]);
  await refused(t, loop, "unsafe_link", "b");

  t.same(resolveLink("a/b", "../c", new Map()), { inside: true });
  t.equal(resolveLink("a", "../c", new Map()).inside, false);
});

t.test("a path twice, or a file where a directory was, is refused", async (t) => {
  const dir = scratch();
  const twice = craft(dir, "twice.tar", "tar", [
    { name: "a.txt", data: "1" },
    { name: "./a.txt", data: "2" },
  ]);
  await refused(t, twice, "unsafe_path", "./a.txt");
  const zipTwice = craft(dir, "twice.zip", "zip", [
    { name: "d/", kind: "dir" },
    { name: "d", data: "file" },
  ]);
  await refused(t, zipTwice, "unsafe_path", "d");
  const fileOverDir = craft(dir, "over.tar", "tar", [
    { name: "d/x", data: "x" },
    { name: "d", data: "file" },
  ]);
  await refused(t, fileOverDir, "unsafe_path", "d");
  const underFile = craft(dir, "under.tar", "tar", [
    { name: "f", data: "file" },
    { name: "f/x", data: "x" },
  ]);
  await refused(t, underFile, "unsafe_path", "f/x");
});

t.test("hard links, FIFOs and other special entries are refused", async (t) => {
  const dir = scratch();
  const src = join(dir, "src");
  mkdirSync(src);
  writeFileSync(join(src, "f"), "data");
  linkSync(join(src, "f"), join(src, "g"));
  sh("tar", ["cf", join(dir, "hard.tar"), "-C", src, "f", "g"]);
  await refused(t, join(dir, "hard.tar"), "unsupported_entry", "g");
  const fifoDir = join(dir, "fifo");
  mkdirSync(fifoDir);
  sh("mkfifo", [join(fifoDir, "pipe")]);
  sh("tar", ["czf", join(dir, "fifo.tgz"), "-C", fifoDir, "pipe"]);
  await refused(t, join(dir, "fifo.tgz"), "unsupported_entry", "pipe");
  const crafted = craft(dir, "fifo.tar", "tar", [{ name: "p", kind: "fifo" }]);
  await refused(t, crafted, "unsupported_entry", "p");
});

t.test("limits: entries, inflated bytes, and the ratio of a bomb, stopped early", async (t) => {
  const dir = scratch();
  const many = Array.from({ length: 10 }, (_, i) => ({ name: `f${i}`, data: `${i}` }));
  await refused(t, craft(dir, "many.tar", "tar", many), "too_many_entries", "f3", { maxEntries: 3 });
  await refused(t, craft(dir, "many.zip", "zip", many), "too_many_entries", "f3", { maxEntries: 3 });
  t.equal((await collect(craft(dir, "ten.zip", "zip", many), { limits: { maxEntries: 10 } })).length, 10);

  const big = [{ name: "big.txt", data: "y".repeat(2 * MiB) }];
  await refused(t, craft(dir, "big.tgz", "tar.gz", big), "too_large", "big.txt", { maxBytes: MiB });
  await refused(t, craft(dir, "big.zip", "zip", big), "too_large", "big.txt", { maxBytes: MiB });

  // 200 MiB of zeros, about 200 KiB compressed: refused a little past 16 MiB, not inflated whole.
  py(
    dir,
    `
import sys, tarfile, zipfile
zeros = bytes(1 << 20)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
    zf.writestr("readme.txt", "not a bomb")
    with zf.open("bomb.bin", "w", force_zip64=True) as w:
        for _ in range(200): w.write(zeros)
class Zeros:
    def __init__(self, n): self.left = n
    def read(self, n):
        n = min(n, self.left); self.left -= n; return bytes(n)
with tarfile.open(sys.argv[2], "w:gz", compresslevel=9) as tf:
    ti = tarfile.TarInfo("bomb.bin"); ti.size = 200 << 20
    tf.addfile(ti, Zeros(ti.size))
`,
    join(dir, "bomb.zip"),
    join(dir, "bomb.tgz"),
  );
  for (const f of ["bomb.zip", "bomb.tgz"]) {
    let received = 0;
    const started = Date.now();
    const err = await (async () => {
      try {
        for await (const e of readArchive(join(dir, f)))
          if (e.kind === "file") for await (const c of e.stream()) received += c.length;
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    t.ok(err instanceof ArchiveError, `${f} refused`);
    t.equal((err as ArchiveError).code, "ratio", (err as Error).message);
    t.equal((err as ArchiveError).entry, "bomb.bin");
    t.ok(received < 32 * MiB, `${f}: ${(received / MiB).toFixed(1)} MiB inflated before the refusal`);
    t.ok(Date.now() - started < 10_000, `${f}: refused in ${Date.now() - started} ms`);
  }

  // Under the ratio's floor a highly compressible bundle passes: 12 MiB of text, ~1:1000.
  py(
    dir,
    String.raw`
import sys, tarfile, io
data = b"log line\n" * (12 * (1 << 20) // 9)
with tarfile.open(sys.argv[1], "w:gz", compresslevel=9) as tf:
    ti = tarfile.TarInfo("log.txt"); ti.size = len(data); tf.addfile(ti, io.BytesIO(data))
`,
    join(dir, "text.tgz"),
  );
  const text = await collect(join(dir, "text.tgz"));
  t.equal(text[0]?.size, (12 * MiB - ((12 * MiB) % 9)) | 0, "12 MiB of text, read whole");
});

t.test("damaged archives: lying sizes, bad CRC, truncation", async (t) => {
  const dir = scratch();
  const entries = [
    { name: "a.txt", data: "x".repeat(1000) },
    { name: "b.txt", data: "b".repeat(10) },
  ];
  // The header of a.txt says 20000 (more than the whole archive) or 100 (the rest is read as a header).
  for (const [label, size] of [
    ["larger", 20000],
    ["smaller", 100],
  ] as const) {
    const file = craft(dir, `lie-${label}.tar`, "tar", entries);
    py(
      dir,
      String.raw`
import sys
f, size = sys.argv[1], int(sys.argv[2])
b = bytearray(open(f, "rb").read())
b[124:136] = b"%011o\0" % size
b[148:156] = b"        "
b[148:156] = b"%06o\0 " % sum(b[0:512])
open(f, "wb").write(bytes(b))
`,
      file,
      String(size),
    );
    await refused(t, file, "corrupt", "a.txt");
  }
  // The central directory's uncompressed size, then its CRC-32, of a.txt.
  for (const [label, offset, value] of [
    ["size", 24, 999],
    ["crc", 16, 12345],
  ] as const) {
    const file = craft(dir, `lie-${label}.zip`, "zip", entries);
    py(
      dir,
      String.raw`
import struct, sys
f, offset, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(f, "rb").read())
at = b.index(b"PK\x01\x02")
b[at + offset:at + offset + 4] = struct.pack("<I", value)
open(f, "wb").write(bytes(b))
`,
      file,
      String(offset),
      String(value),
    );
    await refused(t, file, "corrupt", "a.txt");
  }
  // A tar.gz cut in the middle of a file.
  const whole = craft(dir, "whole.tgz", "tar.gz", [{ name: "r.bin", data: randomBytes(200_000).toString("hex") }]);
  const cut = join(dir, "cut.tgz");
  writeFileSync(cut, readFileSync(whole).subarray(0, 100_000));
  await refused(t, cut, "corrupt", "r.bin");
  // Not a tar inside the gzip.
  const notTar = join(dir, "notes.txt");
  writeFileSync(notTar, "plain text, no tar header at all\n".repeat(100));
  sh("gzip", [notTar]);
  await refused(t, `${notTar}.gz`, "corrupt", undefined);
});

t.test("an empty zip and an empty tar.gz have no entries", async (t) => {
  const dir = scratch();
  const empty = join(dir, "empty.zip");
  py(dir, `import zipfile, sys\nzipfile.ZipFile(sys.argv[1], "w").close()`, empty);
  t.same(await collect(empty), []);
  sh("tar", ["czf", join(dir, "empty.tgz"), "-T", "/dev/null"]);
  t.same(await collect(join(dir, "empty.tgz")), []);
});
