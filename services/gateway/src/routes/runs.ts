import { z } from "zod";
import { COMMAND_RUN_STATUSES, commandRunFinal, StateService } from "@orch/contracts";
import { rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route, type AuthLevel } from "../route.js";
import { qBool, qInt } from "../schemas.js";
import { CommandStream } from "../sse/command-stream.js";
import { serveSse } from "../sse/serve.js";
import { HeldRunOut, heldRunJson, RunOut, RunSummaryOut, runJson } from "./runs-json.js";
import { RunParams, START_RUN_ERRORS, StartRunBody, startRunRequest } from "./runs-schemas.js";

/**
 * Fleet command runs ("command runs" inside the services; `/runs` here). The state service starts,
 * drives, stores and cancels them; these routes validate, map to JSON and stream.
 */

type StateClient = Client<typeof StateService>;

export function runRoutes(ctx: GatewayContext) {
  // One declaration: admin-only unless the configuration grants runs to every operator. (No
  // config when only the OpenAPI document is built: index.ts openApiDocument.)
  const auth: AuthLevel = ctx.config?.gateway.operators_may_run_commands ? "operator" : "admin";
  const who =
    auth === "admin"
      ? "Admin only (`gateway.operators_may_run_commands` grants runs to operators)."
      : "Operators see and cancel only their own runs; admins all.";
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  const streams = new Set<CommandStream>();
  // Open streams would otherwise keep the server from closing.
  ctx.app.addHook("preClose", async () => {
    for (const s of streams) s.close();
  });
  return [...runStartAndListRoutes(state, auth, who), ...runItemRoutes(ctx, state, auth, streams)];
}

function runStartAndListRoutes(state: StateClient, auth: AuthLevel, who: string) {
  return [
    route({
      method: "POST",
      path: "/api/v1/runs",
      auth,
      summary: "Run a command or script on the agents a selector (or a node list) picks",
      description: `Exactly one of \`selector\` / \`node_ids\` and one of \`command\` / \`script\`. Answers at once (202) with the run and its targets, queued; follow it with GET /runs/{id}/stream. A selector matching no agent answers 200 with \`targets: 0\` and status \`completed\`. Maintenance windows never block a run; the active one is recorded. When an approval policy naming \`command.run\` covers one of the agents, nothing runs: the run becomes a change request and the 202 says so (\`status: held\`, \`change_request_id\`); it starts once approved (docs/approvals.md). A held run may not carry \`env\` (409 \`held_run_env\`). An admin may pass \`break_glass: true\` with a \`reason\` instead. ${who} See docs/runs.md.`,
      tags: ["runs"],
      body: StartRunBody,
      responses: { 202: z.union([RunOut, HeldRunOut]), 200: RunOut },
      errors: { 400: START_RUN_ERRORS, 403: ["break_glass_forbidden"], 409: ["held_run_env"] },
      async handler({ body, call }, reply) {
        const run = await state.startCommandRun(startRunRequest(body), call);
        if (!run.id && run.changeRequestId) return reply.code(202).send(heldRunJson(run));
        reply.code(commandRunFinal(run.status) ? 200 : 202).send(runJson(run, "output"));
        return reply;
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/runs",
      auth,
      summary: "List command runs, newest first (without the per-agent results)",
      description: `At most 200 per page (default 50). ${who}`,
      tags: ["runs"],
      query: z.object({
        limit: qInt(1, 200).optional(),
        cursor: z.string().max(200).optional(),
        status: z.enum(COMMAND_RUN_STATUSES).optional(),
      }),
      responses: {
        200: z.object({ runs: z.array(RunSummaryOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      errors: { 400: ["invalid_cursor"] },
      async handler({ query, call }) {
        const r = await state.listCommandRuns(
          { limit: query.limit ?? 0, cursor: query.cursor ?? "", status: query.status ?? "" },
          call,
        );
        return {
          runs: r.runs.map((run) => runJson(run, "none")),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
  ];
}

/** One run: read, cancel, and follow it live. */
function runItemRoutes(ctx: GatewayContext, state: StateClient, auth: AuthLevel, streams: Set<CommandStream>) {
  return [
    route({
      method: "GET",
      path: "/api/v1/runs/{id}",
      auth,
      summary: "One command run with every agent's status, exit code and captured output",
      description:
        "stdout/stderr are capped (`state.command_output_cap_bytes`, `*_truncated` says when bytes were dropped); valid UTF-8 is a string (`*_encoding: utf8`), anything else base64. `?output=false` leaves them out.",
      tags: ["runs"],
      params: RunParams,
      query: z.object({ output: qBool.optional().describe("include stdout/stderr (default true)") }),
      responses: { 200: RunOut },
      errors: { 404: ["run_not_found"] },
      async handler({ params, query, call }) {
        const output = query.output ?? true;
        const run = await state.getCommandRun({ id: params.id, omitOutput: !output }, call);
        return runJson(run, output ? "output" : "status");
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/runs/{id}/cancel",
      auth,
      summary: "Cancel a command run: queued agents never start, running processes are signalled",
      description:
        "Answers 202 with the run (status `cancelling`); each running process group gets SIGTERM, then SIGKILL after 2 s, and the run ends `cancelled`. 409 `run_finished` when it has already ended.",
      tags: ["runs"],
      params: RunParams,
      responses: { 202: RunOut },
      errors: { 404: ["run_not_found"], 409: ["run_finished"] },
      async handler({ params, call }) {
        return runJson(await state.cancelCommandRun({ id: params.id, omitOutput: true }, call), "status");
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/runs/{id}/stream",
      auth,
      summary: "Live output and progress of one command run (Server-Sent Events)",
      description:
        'text/event-stream: `event: run` (the run, agents without output) first; the captured output of agents already finished (`seq` 0); then live `event: output` (`{"node_id","name","stream","data","encoding","seq"}`) and `event: agent` (one agent, without output) on each status change; at the end the stored output of any agent whose live chunks were missed (`seq` 0, the bytes not sent live), then `event: summary` (the run with agents, without output) and `event: end` (`{"status"}`), and the stream closes. A comment every 15 s keeps the connection alive; `event: error` when the credential ends. A reconnecting client starts over from a new snapshot.',
      tags: ["runs"],
      params: RunParams,
      responses: { 200: z.string().meta({ description: "text/event-stream" }) },
      errors: { 404: ["run_not_found"] },
      async handler(req, reply) {
        const { params, call } = req;
        const stream = new CommandStream({
          nc: ctx.nc,
          log: ctx.log,
          registry: streams,
          state,
          call,
          runId: params.id,
          res: reply.raw,
        });
        return serveSse(ctx, req, reply, stream);
      },
    }),
  ];
}
