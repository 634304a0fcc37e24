import t from "tap";
import { ERROR_CATALOGUE } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import type { FastifyReply } from "fastify";
import { problem, problemFromError, sendProblem } from "../src/problem.js";

t.test("problem() takes its status from the error catalogue", async (t) => {
  for (const [code, status, title] of [
    ["route_not_found", 404, "Not Found"],
    ["upgrade_required", 426, "Upgrade Required"],
    ["headers_too_large", 431, "Request Header Fields Too Large"],
    ["secret_exists", 409, "Conflict"],
  ] as const) {
    const p = problem(code, "detail", { field: "x" });
    t.same(p, { type: `https://orch.dev/problems/${code}`, title, status, detail: "detail", code, field: "x" });
    t.equal(p.status, ERROR_CATALOGUE[code].status);
  }
});

t.test("an explicit status wins (fastify's own 4xx request errors)", async (t) => {
  const p = problem("invalid_request", "bad", {}, 413);
  t.equal(p.status, 413);
  t.equal(p.title, "Payload Too Large");
});

t.test("an OrchError keeps the status of its gRPC code and carries the request id", async (t) => {
  const p = problemFromError(new OrchError("NOT_FOUND", "agent_not_found", "no agent 'x'", { field: "node_id" }), "r1");
  t.same(p, {
    type: "https://orch.dev/problems/agent_not_found",
    title: "Not Found",
    status: 404,
    detail: "no agent 'x'",
    code: "agent_not_found",
    field: "node_id",
    request_id: "r1",
  });
  t.equal(problemFromError(new OrchError("UNAVAILABLE", undefined, "down")).code, "unavailable");
});

t.test("an error's details extend the problem but never rewrite its members", async (t) => {
  const p = problemFromError(
    new OrchError("FAILED_PRECONDITION", "run_finished", "run x has already ended", {
      status: "completed",
      code: "other",
      type: "x",
      title: "y",
      detail: "z",
      run_status: "completed",
    }),
  );
  t.equal(p.status, 409);
  t.equal(p.code, "run_finished");
  t.equal(p.type, "https://orch.dev/problems/run_finished");
  t.equal(p.title, "Conflict");
  t.equal(p.detail, "run x has already ended");
  t.equal((p as Record<string, unknown>).run_status, "completed");
});

t.test("503 and 504 carry Retry-After (clients retry them); other errors do not", async (t) => {
  for (const [code, status, retryAfter] of [
    ["service_unavailable", 503, "1"],
    ["timeout", 504, "1"],
    ["agent_timeout", 504, "1"],
    ["secret_exists", 409, undefined],
    ["internal", 500, undefined],
  ] as const) {
    const headers: Record<string, string> = {};
    let sent = 0;
    const reply = {
      header(k: string, v: string) {
        headers[k] = v;
        return reply;
      },
      code(c: number) {
        sent = c;
        return reply;
      },
      type: () => reply,
      send: () => reply,
    };
    sendProblem(reply as unknown as FastifyReply, problem(code, "d"));
    t.equal(sent, status, code);
    t.equal(headers["retry-after"], retryAfter, `${code}: Retry-After ${retryAfter ?? "absent"}`);
  }
});
