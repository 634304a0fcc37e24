import t from "tap";
import { errorLine } from "../src/errors.js";
import { reportError } from "../src/program.js";
import { CliError } from "../src/errors.js";

// The stderr line names the code once, whether or not the message already ends with it.

t.test("unit: the code is appended unless the message already ends with it", async (t) => {
  t.equal(errorLine("plan failed", "secret_not_permitted"), "error: plan failed (secret_not_permitted)");
  t.equal(
    errorLine("plan failed (secret_not_permitted)", "secret_not_permitted"),
    "error: plan failed (secret_not_permitted)",
  );
  t.equal(errorLine("bad (other_code)", "invalid_argument"), "error: bad (other_code) (invalid_argument)");
});

t.test("unit: reportError prints one code, hint lines below it", async (t) => {
  let stderr = "";
  const io = { stdout: { write: () => true }, stderr: { write: (s: string) => (stderr += s) }, env: {} };
  reportError(new CliError("plan failed (secret_not_permitted)\nhint: grant it", "secret_not_permitted"), io, false);
  t.equal(stderr, "error: plan failed (secret_not_permitted)\nhint: grant it\n");
});
