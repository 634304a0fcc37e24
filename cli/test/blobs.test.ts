import t from "tap";
import type { IncomingMessage, ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl blobs rm against the in-test API: DELETE of the digest, a line or --json on success,
// and the server's blob_in_use problem (with the modules it names) as the error.

const DIGEST = `sha256:${"ab".repeat(32)}`;
const IN_USE = `sha256:${"cd".repeat(32)}`;

const problem = (res: ServerResponse, status: number, body: Record<string, unknown>) => {
  res.writeHead(status, { "content-type": "application/problem+json" });
  res.end(JSON.stringify({ type: "about:blank", status, ...body }));
};

/** Answers DELETE of `digest` (its path however the client encodes the colon). */
function onDelete(w: World, digest: string, fn: (req: IncomingMessage, res: ServerResponse) => void) {
  for (const d of [digest, encodeURIComponent(digest)]) w.server.overrides.set(`DELETE /api/v1/blobs/${d}`, fn);
}

t.test("rm deletes the blob; --json says so", async (t) => {
  const w = await loggedIn(t);
  let deletes = 0;
  onDelete(w, DIGEST, (_req, res) => {
    deletes++;
    res.writeHead(204);
    res.end();
  });
  const r = await cli(["blobs", "rm", DIGEST], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, `Deleted blob ${DIGEST}\n`);
  const j = await cli(["--json", "blobs", "remove", DIGEST], w.env);
  t.equal(j.code, 0, j.stderr);
  t.same(JSON.parse(j.stdout), { removed: true, digest: DIGEST });
  t.equal(deletes, 2);
});

t.test("a blob in use is refused with the server's message", async (t) => {
  const w = await loggedIn(t);
  onDelete(w, IN_USE, (_req, res) =>
    problem(res, 409, {
      title: "blob_in_use",
      code: "blob_in_use",
      detail: `blob ${IN_USE} is named by module web`,
      modules: ["web"],
    }),
  );
  const r = await cli(["blobs", "rm", IN_USE], w.env);
  t.equal(r.code, 1);
  t.match(r.stderr, /is named by module web.*blob_in_use/);
  t.equal(r.stdout, "");
});
