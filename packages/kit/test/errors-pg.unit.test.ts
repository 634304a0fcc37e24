import t from "tap";
import { OrchError } from "@orch/kit";

// What pg raises on the queries in flight when Postgres stops or restarts under load.
const lost: Array<[string, Error & { code?: string }]> = [
  ["refused", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
  ["reset mid-query", Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" })],
  ["socket closed", new Error("Connection terminated unexpectedly")],
  ["broken client reused", new Error("Client has encountered a connection error and is not queryable")],
  ["fast stop", Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" })],
  ["crash of a sibling", Object.assign(new Error("terminating connection because of crash"), { code: "57P02" })],
  ["recovery", Object.assign(new Error("the database system is in recovery mode"), { code: "57P03" })],
  ["connection failure", Object.assign(new Error("connection failure"), { code: "08006" })],
];

t.test("a lost database connection is a retryable 503, never a 500", async (t) => {
  for (const [label, err] of lost) {
    const e = OrchError.from(err);
    t.equal(e.httpStatus, 503, label);
    t.equal(e.reason, "database_unavailable", label);
  }
});

t.test("a query the database refused stays an internal error", async (t) => {
  const e = OrchError.from(Object.assign(new Error('relation "nope" does not exist'), { code: "42P01" }));
  t.equal(e.httpStatus, 500);
});
