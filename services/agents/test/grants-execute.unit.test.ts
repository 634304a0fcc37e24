import { create, toBinary } from "@bufbuild/protobuf";
import { ExecuteRequestSchema } from "@orch/contracts";
import t from "tap";
import { executeOperationId } from "../src/link/grants.js";

// The relay reads an Execute's operation id off the wire instead of decoding every resource: it
// must agree with a full decode on any request, and refuse what a full decode refuses.

const request = (operationId: string) =>
  toBinary(
    ExecuteRequestSchema,
    create(ExecuteRequestSchema, {
      operationId,
      mode: "apply",
      resources: [
        {
          id: "conf",
          module: "web",
          type: "file",
          spec: { path: "/etc/x", content: "a\nb", nested: { list: [1, true, null, "s"] } },
          requires: ["dir"],
        },
      ],
      mask: ["secret-value"],
    }),
  );

t.test("the operation id of a request with resources, a mask and every JSON value type", async (t) => {
  t.equal(executeOperationId(request("01OPERATION")), "01OPERATION");
  t.equal(executeOperationId(request("")), "", "absent when empty");
});

t.test("the id may come after the other fields, and the last one wins as in a full decode", async (t) => {
  const id = (s: string) => toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { operationId: s }));
  const rest = toBinary(ExecuteRequestSchema, create(ExecuteRequestSchema, { mode: "plan", mask: ["m"] }));
  t.equal(executeOperationId(Buffer.concat([rest, id("01LATE")])), "01LATE");
  t.equal(executeOperationId(Buffer.concat([id("01FIRST"), id("01SECOND")])), "01SECOND");
});

t.test("a truncated payload throws", async (t) => {
  const bytes = request("01OPERATION");
  t.throws(() => executeOperationId(bytes.subarray(0, 5)));
});
