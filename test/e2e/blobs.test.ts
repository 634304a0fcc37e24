import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { request } from "node:http";
import { Readable } from "node:stream";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { cli } from "../../cli/test/helpers/cli.js";
import { ed25519 } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// Blobs through the real gateway and state service: streamed uploads verified against their digest,
// refusals that store nothing, and the bytes read back. Postgres and NATS are real; the limit is
// lowered to 8 MiB so "over the limit" is cheap to send.
const MAX = 8 * 1024 * 1024;
const { system, db, dir } = await startStateStack(t, {
  name: "blobs",
  extraServices: ["audit"],
  env: { ORCH_STATE_BLOB_MAX_BYTES: String(MAX) },
});
const admin = await system.login(system.admin);
const opKey = ed25519();
const created = await system.api("POST", "/api/v1/operators", {
  token: admin,
  body: { name: "olga", public_key: opKey.publicKeyHex, role: "operator" },
});
if (created.status !== 201) throw new Error(`operator: ${created.status} ${created.text}`);
const token = await system.login(opKey);

const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(() => sql.end());
const leftovers = async () => {
  const r = await sql.query(
    `SELECT (SELECT count(*) FROM state.blob_uploads)::int AS uploads,
            (SELECT count(*) FROM state.blob_chunks c WHERE NOT EXISTS
               (SELECT 1 FROM state.blobs b WHERE b.content_id = c.content_id))::int AS orphans`,
  );
  return r.rows[0] as { uploads: number; orphans: number };
};

const digestOf = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  type: string;
}

/**
 * PUT of `body` as a stream: sent in 64 KiB pieces (declared with Content-Length unless `chunked`),
 * or cut after `cutAt` bytes by destroying the socket.
 */
function put(
  digest: string,
  body: Buffer,
  o: { chunked?: boolean; cutAt?: number; length?: number; headers?: Record<string, string> } = {},
): Promise<Answer | "cut"> {
  const url = new URL(`/api/v1/blobs/${digest}`, system.url);
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    "content-type": "application/octet-stream",
    ...o.headers,
  };
  if (!o.chunked) headers["content-length"] = String(o.length ?? body.length);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(url, { method: "PUT", headers }, (res) => {
      answered = true;
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          body: text ? JSON.parse(text) : {},
          type: res.headers["content-type"] ?? "",
        }),
      );
    });
    // A server that answers before the body is sent (already stored, too large) closes the
    // connection: the writes still under way fail, and the answer is what counts.
    req.on("error", (err) => {
      if (o.cutAt !== undefined) resolve("cut");
      else if (!answered) reject(err);
      pieces.destroy();
    });
    const end = o.cutAt ?? body.length;
    const pieces = Readable.from(
      (function* () {
        for (let i = 0; i < end; i += 65_536) yield body.subarray(i, Math.min(end, i + 65_536));
      })(),
    );
    pieces.on("end", () => {
      if (o.cutAt !== undefined) setTimeout(() => req.destroy(), 200);
      else req.end();
    });
    pieces.on("data", (d: Buffer) => {
      if (!req.write(d)) {
        pieces.pause();
        req.once("drain", () => pieces.resume());
      }
    });
  });
}

const answer = (a: Answer | "cut"): Answer => {
  if (a === "cut") throw new Error("the request was cut");
  return a;
};

const content = randomBytes(5 * 1024 * 1024 + 12_345);
const digest = digestOf(content);

t.test("a streamed upload is stored under its digest, once, and reads back byte for byte", async (t) => {
  const first = answer(await put(digest, content));
  t.equal(first.status, 201, JSON.stringify(first.body));
  t.match(first.body, { digest, size: content.length, created_by_name: "olga" });

  const again = answer(await put(digest, content));
  t.equal(again.status, 200, "already stored: 200, nothing stored again");
  t.equal(again.body.created_at, first.body.created_at);

  const meta = await system.api("GET", `/api/v1/blobs/${digest}`, { token });
  t.same(meta.body, first.body);
  const dl = await fetch(new URL(`/api/v1/blobs/${digest}/content`, system.url), {
    headers: { authorization: `Bearer ${token}` },
  });
  t.equal(dl.status, 200);
  t.equal(dl.headers.get("content-length"), String(content.length));
  const back = Buffer.from(await dl.arrayBuffer());
  t.equal(digestOf(back), digest, "the download is the upload");

  const list = await system.api("GET", "/api/v1/blobs?limit=10", { token });
  t.same(
    list.body.blobs.map((b: { digest: string }) => b.digest),
    [digest],
  );
  t.same(await leftovers(), { uploads: 0, orphans: 0 });
});

t.test("a chunked upload (no Content-Length) and an Idempotency-Key work as any other", async (t) => {
  const small = randomBytes(700_000);
  const r = answer(await put(digestOf(small), small, { chunked: true, headers: { "idempotency-key": "blob-k1" } }));
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.equal(r.body.size, small.length);
  const empty = Buffer.alloc(0);
  const e = answer(await put(digestOf(empty), empty));
  t.equal(e.status, 201, "a zero-byte blob");
  t.equal(e.body.size, 0);
});

t.test("bytes that do not hash to the digest are refused and nothing is stored", async (t) => {
  const other = randomBytes(1024 * 1024);
  const wrong = digestOf(Buffer.from("something else"));
  const r = answer(await put(wrong, other));
  t.equal(r.status, 400);
  t.match(r.type, /application\/problem\+json/);
  t.equal(r.body.code, "blob_digest_mismatch");
  t.equal(r.body.actual, digestOf(other), "names what the bytes hash to");
  const gone = await system.api("GET", `/api/v1/blobs/${wrong}`, { token });
  t.equal(gone.status, 404);
  t.equal(gone.body.code, "blob_not_found");
  t.same(await leftovers(), { uploads: 0, orphans: 0 });
});

t.test("an upload cut off part-way stores nothing", async (t) => {
  const big = randomBytes(3 * 1024 * 1024);
  const d = digestOf(big);
  t.equal(await put(d, big, { cutAt: 1024 * 1024 + 17 }), "cut");
  // The gateway aborts the upload when the stream breaks: no rows stay behind.
  const until = Date.now() + 15_000;
  let left = await leftovers();
  while ((left.uploads || left.orphans) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    left = await leftovers();
  }
  t.same(left, { uploads: 0, orphans: 0 });
  t.equal((await system.api("GET", `/api/v1/blobs/${d}`, { token })).status, 404);
});

t.test("a body that ends before its Content-Length stores nothing", async (t) => {
  const b = randomBytes(300_000);
  // Declares more than it sends, then ends the request: node's parser sees a premature end.
  const short = await put(digestOf(b), b, { length: b.length + 10, cutAt: b.length });
  t.equal(short, "cut");
  t.equal((await system.api("GET", `/api/v1/blobs/${digestOf(b)}`, { token })).status, 404);
});

t.test("over the limit: refused with 413 before the body is read", async (t) => {
  const huge = await new Promise<Answer>((resolve, reject) => {
    const req = request(
      new URL(`/api/v1/blobs/${digestOf(Buffer.from("x"))}`, system.url),
      {
        method: "PUT",
        headers: { authorization: `Bearer ${token}`, "content-length": String(2 * 1024 ** 3) },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), type: "" }));
      },
    );
    req.on("error", reject);
    req.write(Buffer.alloc(1024)); // 1 KiB of the declared 2 GiB, then nothing more
  });
  t.equal(huge.status, 413);
  t.equal(huge.body.code, "blob_too_large");
  t.equal(huge.body.max_bytes, MAX);

  // Chunked, so only the running total can tell: refused once it passes the limit.
  const over = randomBytes(MAX + 1);
  const r = answer(await put(digestOf(over), over, { chunked: true }));
  t.equal(r.status, 413);
  t.equal(r.body.code, "blob_too_large");
  t.same(await leftovers(), { uploads: 0, orphans: 0 });
});

t.test("bad digests and anonymous callers are refused", async (t) => {
  for (const bad of ["sha256:abc", `sha256:${"A".repeat(64)}`, `md5:${"a".repeat(64)}`]) {
    const r = answer(await put(bad, Buffer.from("x")));
    t.equal(r.status, 400, bad);
    t.equal(r.body.code, "invalid_digest", bad);
    const g = await system.api("GET", `/api/v1/blobs/${bad}`, { token });
    t.equal(g.body.code, "invalid_digest", `GET ${bad}`);
  }
  const anon = await fetch(new URL(`/api/v1/blobs/${digest}`, system.url), { method: "PUT", body: "x" });
  t.equal(anon.status, 401);
  t.equal((await system.api("GET", "/api/v1/blobs", {})).status, 401);
});

t.test("each stored blob is one audit event, with its digest and size", async (t) => {
  let events: Array<{ target: { id: string }; metadata: { size: number } }> = [];
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    const r = await system.api("GET", "/api/v1/audit?event_type=blob.uploaded&limit=50", { token: admin });
    events = r.body.events ?? [];
    if (events.length >= 3) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(events.length, 3, "the 5 MiB blob, the chunked one and the empty one; no refused upload");
  const big = events.find((e) => e.target.id === digest);
  t.equal(big?.metadata.size, content.length);
});

t.test("orchctl blobs put streams a file, says when it is stored already, and lists it", async (t) => {
  const env = { HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url };
  const orchctl = (args: string[]) => cli(args, env);
  const pem = join(dir, "admin.pem");
  writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  t.equal((await orchctl(["login", "--key", pem])).code, 0);

  const file = join(dir, "tool.bin");
  const bytes = randomBytes(1024 * 1024 + 5);
  writeFileSync(file, bytes);
  const d = digestOf(bytes);
  const first = await orchctl(["blobs", "put", file]);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, `Uploaded blob ${d} (${bytes.length} bytes)`);
  t.match(first.stdout, `source: ${d}`, "says how a module names it");
  const again = await orchctl(["--json", "blobs", "put", file]);
  t.equal(again.code, 0, again.stderr);
  t.match(JSON.parse(again.stdout), { digest: d, size: bytes.length, created: false });
  const list = await orchctl(["blobs", "list"]);
  t.match(list.stdout, d);
  const show = await orchctl(["--json", "blobs", "show", d]);
  t.match(JSON.parse(show.stdout), { digest: d, size: bytes.length, created_by_name: "admin" });
  const missing = await orchctl(["blobs", "put", join(dir, "nope.bin")]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /cannot read .*nope\.bin.*file_unreadable/);
});
