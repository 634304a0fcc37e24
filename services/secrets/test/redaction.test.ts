// The kit's second line of defence: log redaction of value-shaped fields and keyrings, and the
// masking helper consumers of Resolve apply to plans and captured output.
import t from "tap";
import { maskValues } from "@orch/kit";
import { memoryLogger } from "@orch/kit/testing";
import { secretsConfigSchema } from "../src/config.js";
import { newKey } from "./harness.js";

t.test("values and keyrings are redacted wherever they sit in a log object", async (t) => {
  const { log, lines } = memoryLogger("secrets");
  const v = "s3cr3t-value-123";
  const keys = `${newKey("a")},${newKey("b")}`;
  log.info({ value: v }, "top");
  log.info({ req: { value: v } }, "one level");
  log.info({ req: { body: { value: v, name: "db" } } }, "two levels");
  log.info({ config: secretsConfigSchema.parse({ secrets: { keys } }) }, "config");
  log.info({ secrets: { keys } }, "section");
  const all = lines.join("");
  t.notOk(all.includes(v), "no value");
  for (const k of keys.split(",")) t.notOk(all.includes(k.split(":")[1]!), "no key");
  t.equal(all.match(/\[redacted\]/g)?.length, 5);
  t.match(all, /"name":"db"/, "other fields stay");
});

t.test("maskValues masks every occurrence, longest value first", async (t) => {
  t.equal(
    maskValues("user=admin pass=hunter2 again hunter2", ["hunter2"]),
    "user=admin pass=[redacted] again [redacted]",
  );
  t.equal(maskValues("token abc123456", ["abc", "abc123456"]), "token [redacted]");
  t.equal(maskValues("nothing here", ["", "zzz"]), "nothing here");
  t.equal(maskValues("a.b*c", ["b*c"], "***"), "a.***", "values are literal, not patterns");
});

t.test("the service refuses to start its config without a usable key, naming the variable", async (t) => {
  const r = secretsConfigSchema.safeParse({ secrets: { keys: "" } });
  t.notOk(r.success);
  t.match(r.error?.issues[0]?.message, /set ORCH_SECRETS_KEYS/);
  const short = secretsConfigSchema.safeParse({ secrets: { keys: "a:c2hvcnQ=" } });
  t.match(short.error?.issues[0]?.message, /key 'a': the key must be 32 bytes/);
  t.notOk(JSON.stringify(short.error).includes("c2hvcnQ="), "the key is not echoed");
});
