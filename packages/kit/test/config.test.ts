import t from "tap";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { baseConfigSchema, loadConfig } from "@orch/kit";

const schema = baseConfigSchema.extend({
  audit: z
    .object({ retention_days: z.number().int().min(1).nullable().default(null), name: z.string().default("x") })
    .prefault({}),
});

t.test("defaults apply with no file and no env", async (t) => {
  const c = loadConfig(schema, {});
  t.equal(c.nats.url, "nats://127.0.0.1:4222");
  t.equal(c.audit.retention_days, null);
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.nats), "frozen");
});

t.test("orch.yaml, then ORCH_<SECTION>_<KEY> and aliases override it", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "cfg-"));
  const file = join(dir, "orch.yaml");
  writeFileSync(file, "audit:\n  retention_days: 30\n  name: from-file\nnats:\n  url: nats://file:4222\n");
  const fromFile = loadConfig(schema, { ORCH_CONFIG: file });
  t.equal(fromFile.audit.retention_days, 30);
  t.equal(fromFile.audit.name, "from-file");
  const env = loadConfig(schema, {
    ORCH_CONFIG: file,
    ORCH_AUDIT_RETENTION_DAYS: "7",
    NATS_URL: "nats://env:4222",
    ORCH_AUDIT_NAME: "42abc",
  });
  t.equal(env.audit.retention_days, 7, "numbers parse");
  t.equal(env.nats.url, "nats://env:4222", "alias");
  t.equal(env.audit.name, "42abc", "strings stay strings");
  t.equal(
    loadConfig(schema, { ORCH_CONFIG: file, ORCH_AUDIT_RETENTION_DAYS: "null" }).audit.retention_days,
    null,
    "null clears",
  );
});

t.test("bad values fail fast naming every key", async (t) => {
  t.throws(
    () => loadConfig(schema, { ORCH_AUDIT_RETENTION_DAYS: "0", ORCH_HEALTH_PORT: "99999" }),
    /audit\.retention_days[\s\S]*health\.port|health\.port[\s\S]*audit\.retention_days/,
  );
  t.throws(() => loadConfig(schema, { ORCH_CONFIG: "/nonexistent/orch.yaml" }), /cannot read \/nonexistent\/orch.yaml/);
});
