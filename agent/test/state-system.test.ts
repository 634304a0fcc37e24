import t from "tap";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { byId, scratch, stateHarness, type Res } from "./state-harness.js";

const h = await stateHarness();

const dpkgStatus = (pkg: string) =>
  spawnSync("dpkg-query", ["-W", "-f=${db:Status-Status}", pkg], { encoding: "utf8" }).stdout;
const getent = (db: string, key: string) => {
  const r = spawnSync("getent", [db, key], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
};

t.test(
  "package: an installed Debian package is ok; a missing one would be installed (plan installs nothing)",
  async (t) => {
    const missing = "sl"; // a tiny package that no image of this project installs
    t.equal(dpkgStatus(missing), "", "precondition: not installed");
    const r = byId(
      await h.execute("plan", [
        { id: "bash", type: "package", spec: { name: "bash" } },
        { id: "missing", type: "package", spec: { name: missing } },
        { id: "wrongver", type: "package", spec: { name: "bash", version: "0.0.1" } },
        { id: "gone", type: "package", spec: { name: missing, state: "absent" } },
        { id: "bad", type: "package", spec: { name: "-oops" } },
      ]),
    );
    t.equal(r.bash!.status, "ok");
    t.equal(r.bash!.observed!.manager, "apt");
    t.equal(r.bash!.observed!.installed, true);
    t.match(String(r.bash!.observed!.version), /^5\./);
    t.equal(r.missing!.status, "changed");
    t.equal(r.missing!.diff, `install ${missing}\n`);
    t.equal(r.wrongver!.status, "changed");
    t.match(r.wrongver!.diff, /^change bash 5\.\S+ -> 0\.0\.1$/m);
    t.equal(r.gone!.status, "ok", "absent and not installed");
    t.equal(r.bad!.status, "failed");
    t.match(r.bad!.message, /not a valid package name/);
    t.equal(dpkgStatus(missing), "", "plan installed nothing");

    const apply = byId(
      await h.execute("apply", [
        { id: "gone", type: "package", spec: { name: missing, state: "absent" } },
        { id: "bash", type: "package", spec: { name: "bash" } },
      ]),
    );
    t.same(
      [apply.gone!.changed, apply.bash!.changed],
      [false, false],
      "apply of a satisfied package state runs nothing",
    );
  },
);

t.test("service: without systemd the result is a clear unsupported; with it, a check-only plan", async (t) => {
  const hasSystemd = existsSync("/run/systemd/system");
  const r = byId(
    await h.execute("plan", [
      { id: "svc", type: "service", spec: { name: "systemd-journald", state: "running" } },
      { id: "after", type: "file", spec: { path: "/nonexistent-dir/x", content: "" }, requires: ["m/svc"] },
      { id: "bad", type: "service", spec: { name: "x" } },
    ]),
  );
  if (hasSystemd) {
    t.equal(r.svc!.status, "ok", "journald runs wherever systemd does");
  } else {
    t.equal(r.svc!.status, "unsupported");
    t.match(r.svc!.message, /need systemd.*\/run\/systemd\/system is missing/);
    t.equal(r.after!.status, "skipped", "an unsupported requirement is not satisfied");
  }
  t.equal(r.bad!.status, "failed", "spec errors are reported before the systemd check");
  t.match(r.bad!.message, /"state" or "enabled"/);
});

t.test("user and group: plan, create, idempotent re-apply, modify, remove", async (t) => {
  const suffix = Math.random().toString(36).slice(2, 8);
  const user = `orcht${suffix}`;
  const group = `orchg${suffix}`;
  const home = join(scratch(t), "home");
  t.teardown(() => {
    spawnSync("userdel", [user]);
    spawnSync("groupdel", [group]);
  });
  const mod = (shell = "/bin/sh"): Res[] => [
    {
      id: "u",
      type: "user",
      spec: { name: user, group, groups: ["users"], comment: "orch test", home, shell },
      requires: ["m/g"],
    },
    { id: "g", type: "group", spec: { name: group } },
  ];

  const plan = byId(await h.execute("plan", mod()));
  t.equal(plan.g!.status, "changed");
  t.equal(plan.g!.diff, `create group ${group}\n`);
  t.equal(plan.u!.status, "changed");
  t.equal(plan.u!.diff, `create user ${user}\n`);
  t.equal(getent("passwd", user), null, "plan created no user");
  t.equal(getent("group", group), null, "plan created no group");

  const apply = await h.execute("apply", mod());
  t.same(
    apply.map((r) => [r.id, r.status]),
    [
      ["g", "changed"],
      ["u", "changed"],
    ],
  );
  const gid = Number(getent("group", group)!.split(":")[2]);
  t.match(
    getent("passwd", user),
    new RegExp(`^${user}:x:\\d+:${gid}:orch test:${home}:/bin/sh$`),
    "primary group, comment, home, shell",
  );
  t.match(getent("group", "users"), new RegExp(`[:,]${user}(,|$)`), "supplementary group");
  t.ok(existsSync(home), "home directory created");
  t.same(byId(apply).u!.observed!.groups, ["users"]);
  t.equal(byId(apply).u!.observed!.gid, gid);

  t.ok(
    (await h.execute("apply", mod())).every((r) => r.status === "ok" && !r.changed),
    "second apply: zero changes",
  );

  const change = byId(await h.execute("plan", mod("/bin/bash")));
  t.equal(change.u!.diff, "shell /bin/sh -> /bin/bash\n");
  t.equal(change.g!.status, "ok");
  t.equal(byId(await h.execute("apply", mod("/bin/bash"))).u!.status, "changed");
  t.match(getent("passwd", user), /:\/bin\/bash$/);

  const remove: Res[] = [
    { id: "u", type: "user", spec: { name: user, state: "absent" } },
    { id: "g", type: "group", spec: { name: group, state: "absent" }, requires: ["m/u"] },
  ];
  const gone = await h.execute("apply", remove);
  t.same(
    gone.map((r) => [r.id, r.status]),
    [
      ["u", "changed"],
      ["g", "changed"],
    ],
  );
  t.equal(getent("passwd", user), null);
  t.equal(getent("group", group), null);
  t.ok(
    (await h.execute("apply", remove)).every((r) => r.status === "ok"),
    "removing twice: no change",
  );
});

t.test("a failing account command fails with its exit code and stderr", async (t) => {
  const r = byId(
    await h.execute("apply", [{ id: "g", type: "group", spec: { name: `orchx${Date.now().toString(36)}`, gid: 0 } }]),
  ).g!;
  t.equal(r.status, "failed");
  t.match(r.message, /groupadd exited with code \d+/);
  t.match(r.stderr, /GID '0' already exists/);
  t.equal(execFileSync("getent", ["group", "0"], { encoding: "utf8" }).split(":")[0], "root");
});
