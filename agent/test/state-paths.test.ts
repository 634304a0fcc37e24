// Rendered paths on the agent: a rendered path is normalised, must be absolute, and a `..` segment is
// refused as a failed resource with a clear message (nothing is written outside the path meant).
import t from "tap";
import { existsSync, mkdirSync, readFileSync, readlinkSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { byId, scratch, stateHarness, type Res } from "./state-harness.js";

const h = await stateHarness();

t.test("a '..' segment in a path is refused in plan and apply, and nothing is written", async (t) => {
  const dir = scratch(t);
  mkdirSync(join(dir, "srv"));
  // What `path: <dir>/srv/{{ tags.app }}/conf` renders to with tag app=../escaped
  const escaping = `${join(dir, "srv")}/../escaped.conf`;
  const cases: Res[] = [
    { id: "file", type: "file", spec: { path: escaping, content: "x\n" } },
    { id: "dir", type: "directory", spec: { path: `${dir}/srv/../made` } },
    { id: "link", type: "symlink", spec: { path: `${dir}/srv/..`, target: "/etc/hostname" } },
    { id: "exec", type: "exec", spec: { command: "true", creates: `${dir}/srv/../x`, cwd: dir } },
  ];
  for (const mode of ["plan", "apply"]) {
    const res = byId(await h.execute(mode, cases));
    for (const c of cases) {
      t.equal(res[c.id]!.status, "failed", `${mode} ${c.id} failed`);
      t.match(res[c.id]!.message, /must not contain '\.\.' segments/, `${mode} ${c.id}: clear message`);
    }
  }
  t.notOk(existsSync(join(dir, "escaped.conf")), "no file outside");
  t.notOk(existsSync(join(dir, "made")), "no directory outside");
  t.same(readdirSync(join(dir, "srv")), [], "nothing inside either");
});

t.test("a symlink target with '..' is refused, relative or absolute", async (t) => {
  const dir = scratch(t);
  const res = byId(
    await h.execute("apply", [
      { id: "rel", type: "symlink", spec: { path: join(dir, "rel"), target: "../../etc/shadow" } },
      { id: "abs", type: "symlink", spec: { path: join(dir, "abs"), target: "/srv/app/../../etc/shadow" } },
    ]),
  );
  t.equal(res.rel!.status, "failed");
  t.match(res.rel!.message, /"target" must not contain '\.\.' segments/);
  t.equal(res.abs!.status, "failed");
  t.same(readdirSync(dir), [], "no link created");
});

t.test("paths are normalised; relative paths stay refused", async (t) => {
  const dir = scratch(t);
  const res = byId(
    await h.execute("apply", [
      { id: "f", type: "file", spec: { path: `${dir}//a/./b.conf/`, content: "hi\n" }, requires: ["m/d"] },
      { id: "d", type: "directory", spec: { path: `${dir}/./a//` } },
      { id: "l", type: "symlink", spec: { path: `${dir}/l`, target: `${dir}//a/./b.conf` }, requires: ["m/f"] },
      { id: "same", type: "symlink", spec: { path: `${dir}/same`, target: "a/b.conf" }, requires: ["m/f"] },
      { id: "rel", type: "file", spec: { path: "etc/passwd", content: "x" } },
    ]),
  );
  t.equal(res.f!.status, "changed", res.f!.message);
  t.equal(readFileSync(join(dir, "a", "b.conf"), "utf8"), "hi\n", "written at the normalised path");
  t.equal(readlinkSync(join(dir, "l")), join(dir, "a", "b.conf"), "an absolute target is normalised");
  t.equal(readlinkSync(join(dir, "same")), "a/b.conf", "a relative target without '..' is kept as given");
  t.equal(res.rel!.status, "failed");
  t.match(res.rel!.message, /must be an absolute path/);
  const plain = { id: "f", type: "file", spec: { path: `${dir}/a/b.conf`, content: "hi\n" } };
  const again = byId(await h.execute("plan", [plain]));
  t.equal(again.f!.status, "ok", "the normalised and the plain spelling are the same file");
});
