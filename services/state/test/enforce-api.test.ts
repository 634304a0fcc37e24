import t from "tap";
import { eventually } from "@orch/kit/testing";
import { startStack } from "./harness.js";

// `enforce` on assignments through the gateway: absent = false on create, unchanged on update,
// validated, carried by the audit events.
const s = await startStack(t);
const m = await s.api("POST", "/modules", { name: "motd", content: "name: motd\nresources: []\n" });
if (m.status !== 201) throw new Error(m.text);

t.test("create: absent is false; true is stored and shown by GET and the list", async (t) => {
  const plain = await s.api("POST", "/assignments", { name: "plain", selector: "*", modules: ["motd"] });
  t.equal(plain.status, 201);
  t.equal(plain.body.enforce, false);
  const on = await s.api("POST", "/assignments", { name: "on", selector: "*", modules: ["motd"], enforce: true });
  t.equal(on.status, 201);
  t.equal(on.body.enforce, true);
  t.equal((await s.api("GET", "/assignments/on")).body.enforce, true);
  const list = (await s.api("GET", "/assignments")).body.assignments as any[];
  t.same(
    list.map((a) => [a.name, a.enforce]),
    [
      ["on", true],
      ["plain", false],
    ],
  );
  const created = await eventually(async () => {
    const ev = (await s.events("assignment.created")).filter((e) => e.target?.id === "on");
    return ev.length ? ev : undefined;
  });
  t.equal(created[0]!.metadata?.enforce, true);
});

t.test("update: absent keeps enforce mode, false turns it off", async (t) => {
  const kept = await s.api("PUT", "/assignments/on", { selector: "env=prod", modules: ["motd"] });
  t.equal(kept.status, 200);
  t.equal(kept.body.enforce, true, "absent = unchanged");
  t.equal(kept.body.selector, "env=prod");
  const off = await s.api("PUT", "/assignments/on", { selector: "env=prod", modules: ["motd"], enforce: false });
  t.equal(off.body.enforce, false);
  t.equal((await s.api("GET", "/assignments/on")).body.enforce, false);
  const updated = await eventually(async () => {
    const ev = (await s.events("assignment.updated")).filter((e) => e.target?.id === "on");
    return ev.length === 2 ? ev : undefined;
  });
  const last = updated.find((e) => e.metadata?.enforce === false)!;
  t.ok(last, "the update that turned it off");
  t.equal((last.metadata?.previous as any)?.enforce, true);
});

t.test("a non-boolean enforce is 400", async (t) => {
  for (const bad of ["yes", 1, null]) {
    const c = await s.api("POST", "/assignments", { name: "bad", selector: "*", modules: ["motd"], enforce: bad });
    t.equal(c.status, 400, `create enforce=${JSON.stringify(bad)}`);
    const u = await s.api("PUT", "/assignments/plain", { selector: "*", modules: ["motd"], enforce: bad });
    t.equal(u.status, 400, `update enforce=${JSON.stringify(bad)}`);
  }
  t.equal((await s.api("GET", "/assignments/bad")).status, 404);
  t.equal((await s.api("GET", "/assignments/plain")).body.enforce, false);
});

t.test("operations carry remediates: null unless enforcement ran them", async (t) => {
  const ops = (await s.api("GET", "/state/operations")).body;
  t.same(ops.operations, []);
  const dir = s.tempDir();
  const agent = await s.addAgent({ name: "web-1" });
  await s.api("POST", "/modules", {
    name: "conf",
    content: `name: conf\nresources:\n  - { id: f, type: file, path: '${dir}/f', content: "x" }\n`,
  });
  const apply = await s.api("POST", `/agents/${agent}/apply?wait=30`, { modules: ["conf"] });
  t.equal(apply.body.status, "succeeded");
  t.equal(apply.body.remediates, null);
  const listed = (await s.api("GET", "/state/operations")).body.operations as any[];
  t.equal(listed[0].remediates, null);
});
