import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import t from "tap";
import { cli, rawFromOpenSshPubLine, sshKeygen } from "./helpers/cli.js";
import { loggedIn } from "./helpers/setup.js";

const hex = () => randomBytes(32).toString("hex");

t.test("operators list: table, one page with --limit/--cursor, every page with --all", async (t) => {
  const w = await loggedIn(t);
  for (const n of ["bob", "carol", "dave", "erin"])
    w.server.addOperator(n, hex(), n === "carol" ? "admin" : "operator", n !== "erin");

  const r = await cli(["operators", "list"], w.env);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split("\n");
  t.match(lines[0], /^NAME\s+ID\s+ROLE\s+ACTIVE\s+SCOPE\s+CREATED$/);
  t.equal(lines.length, 6);
  const erin = w.server.operators.find((o) => o.name === "erin")!;
  t.match(lines[5], new RegExp(`^erin\\s+${erin.id}\\s+operator\\s+no\\s+\\(all agents\\)\\s+${erin.created_at}$`));
  // columns line up
  t.equal(lines[0]!.indexOf("ID"), lines[1]!.indexOf(w.op.id));

  const p1 = await cli(["operators", "list", "--limit", "2"], w.env);
  t.equal(p1.stdout.trimEnd().split("\n").length, 3, "header + 2 rows");
  t.match(p1.stderr, /--cursor 2/);
  t.equal(w.server.requests.at(-1)?.query.get("limit"), "2");

  const p2 = await cli(["operators", "list", "--limit", "2", "--cursor", "2", "--json"], w.env);
  const page = JSON.parse(p2.stdout);
  t.same(
    page.operators.map((o: { name: string }) => o.name),
    ["carol", "dave"],
  );
  t.equal(page.has_more, true);
  t.equal(page.next_cursor, "4");

  const before = w.server.requests.length;
  const all = await cli(["operators", "list", "--all", "--limit", "2", "--json"], w.env);
  t.equal(all.code, 0, all.stderr);
  const doc = JSON.parse(all.stdout);
  t.same(
    doc.operators.map((o: { name: string }) => o.name),
    ["alice", "bob", "carol", "dave", "erin"],
  );
  t.equal(doc.has_more, false);
  t.same(
    w.server.requests.slice(before).map((q) => q.query.get("cursor")),
    [null, "2", "4"],
    "--all followed next_cursor through 3 pages",
  );

  const bad = await cli(["operators", "list", "--limit", "zero"], w.env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--limit must be a positive integer/);
});

t.test("operators add accepts hex, keygen .pub, OpenSSH lines and files", async (t) => {
  const w = await loggedIn(t);
  const dir = w.env.HOME;

  const h = hex();
  const r1 = await cli(["operators", "add", "bob", "--public-key", h.toUpperCase()], w.env);
  t.equal(r1.code, 0, r1.stderr);
  t.match(r1.stdout, /^Added operator bob \(operator\), id [0-9a-f-]{36}$/m);
  t.same(w.server.requests.at(-1)?.body, { name: "bob", public_key: h, role: "operator" });

  const kg = await cli(["keygen", "--out", join(dir, "carol")], w.env);
  t.equal(kg.code, 0);
  const carolHex = (await readFile(join(dir, "carol.pub"), "utf8")).trim();
  const r2 = await cli(
    ["operators", "add", "carol", "--public-key", join(dir, "carol.pub"), "--role", "admin", "--json"],
    w.env,
  );
  t.equal(r2.code, 0, r2.stderr);
  t.match(JSON.parse(r2.stdout), { name: "carol", role: "admin", public_key: carolHex, created_by: w.op.id });

  const ssh = await sshKeygen(join(dir, "dave"));
  const line = await readFile(`${ssh}.pub`, "utf8");
  const daveHex = rawFromOpenSshPubLine(line).toString("hex");
  const r3 = await cli(["operators", "add", "dave", "--public-key", line.trim()], w.env);
  t.equal(r3.code, 0, r3.stderr);
  t.equal((w.server.requests.at(-1)!.body as { public_key: string }).public_key, daveHex, "OpenSSH line → hex");

  const r4 = await cli(["operators", "add", "dave2", "--public-key", `${ssh}.pub`], w.env);
  t.equal(r4.code, 0, r4.stderr);
  t.equal((w.server.requests.at(-1)!.body as { public_key: string }).public_key, daveHex, "OpenSSH .pub file → hex");

  const n = w.server.requests.length;
  const bad = await cli(["operators", "add", "eve", "--public-key", "not-a-key"], w.env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /not 64 hex characters, an ssh-ed25519 line, or a readable file/);
  const rsaFile = join(dir, "rsa.pub");
  await writeFile(rsaFile, "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7 x@y\n");
  const rsa = await cli(["operators", "add", "eve", "--public-key", rsaFile], w.env);
  t.equal(rsa.code, 1);
  t.match(rsa.stderr, /only Ed25519/);
  const role = await cli(["operators", "add", "eve", "--public-key", h, "--role", "root"], w.env);
  t.equal(role.code, 1);
  t.match(role.stderr, /Allowed choices are operator, admin/);
  t.equal(w.server.requests.length, n, "nothing was sent for invalid input");

  const dup = await cli(["operators", "add", "bob", "--public-key", hex()], w.env);
  t.equal(dup.code, 1);
  t.equal(dup.stderr, "error: operator bob already exists (operator_exists)\n");
  const dupJson = await cli(["operators", "add", "bob", "--public-key", hex(), "--json"], w.env);
  t.same(JSON.parse(dupJson.stdout), {
    type: "https://orch.example/problems/operator_exists",
    title: "operator exists",
    status: 409,
    detail: "operator bob already exists",
    code: "operator_exists",
  });
});

t.test("operators get and remove (by id or name)", async (t) => {
  const w = await loggedIn(t);
  const bob = w.server.addOperator("bob", hex());

  const g = await cli(["operators", "get", "bob", "--json"], w.env);
  t.same(JSON.parse(g.stdout), bob);
  const g2 = await cli(["operators", "get", bob.id], w.env);
  t.match(g2.stdout, new RegExp(`id:\\s+${bob.id}`));

  const rm = await cli(["operators", "remove", "bob"], w.env);
  t.equal(rm.code, 0, rm.stderr);
  t.match(rm.stdout, `Removed operator bob (${bob.id})`);
  t.match(w.server.requests.at(-1), { method: "DELETE", path: `/api/v1/operators/${bob.id}` });
  t.notOk(w.server.operators.some((o) => o.name === "bob"));

  const missing = await cli(["operators", "remove", "bob"], w.env);
  t.equal(missing.code, 1);
  t.equal(missing.stderr, "error: no operator bob (operator_not_found)\n");
});

t.test("non-admin gets the server's 403 problem", async (t) => {
  const w = await loggedIn(t, "operator");
  const r = await cli(["operators", "list"], w.env);
  t.equal(r.code, 1);
  t.equal(r.stderr, "error: this operation requires the admin role (admin_required)\n");
});
