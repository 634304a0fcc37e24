/** orchctl values list | show <set> | set <set> -f file.yaml | rm <set> | agent <agent> | set-agent <agent> -f file.yaml | explain <agent> <key.path> */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { unwrap } from "@orch/client";
import { AGENT_ARG, resolveNodeId } from "../agent-lookup.js";
import { action, type Context } from "../context.js";
import { CliError, ProblemError } from "../errors.js";
import {
  AGENT_VALUE_COLUMNS,
  VALUE_SET_COLUMNS,
  agentValueRows,
  explainLines,
  keysFor,
  valueSetFields,
  valueSetRows,
} from "../format/values.js";
import { listCommand } from "../list-command.js";
import type { CliIO } from "../output.js";

type Sub = (parent: Command, io: CliIO) => void;

async function readYaml(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    throw new CliError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      "file_unreadable",
    );
  }
}

const setPath = (name: string) => ({ params: { path: { name } } });

/** The stored set, or undefined when there is none yet. */
async function existing(ctx: Context, name: string) {
  try {
    return unwrap(await ctx.api.GET("/api/v1/values/{name}", setPath(name)));
  } catch (err) {
    if (err instanceof ProblemError && err.status === 404) return undefined;
    throw err;
  }
}

function parsePriority(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^-?\d+$/.test(text)) throw new CliError(`--priority must be an integer, got '${text}'`, "usage");
  return Number(text);
}

const list: Sub = (values, io) =>
  listCommand(values, io, {
    key: "sets",
    command: "values list",
    description: "list value sets",
    fetch: async (ctx, query) => unwrap(await ctx.api.GET("/api/v1/values", { params: { query } })),
    columns: VALUE_SET_COLUMNS,
    rows: valueSetRows,
  });

const show: Sub = (values, io) =>
  values
    .command("show")
    .description("show a value set and its YAML")
    .argument("<set>", "value set name")
    .action(
      action(io, async (ctx, name: string) => {
        const s = unwrap(await ctx.api.GET("/api/v1/values/{name}", setPath(name)));
        ctx.out.result(s, () => {
          ctx.out.fields(valueSetFields(s));
          ctx.out.line("");
          ctx.out.line(s.content.replace(/\n$/, ""));
        });
      }),
    );

const set: Sub = (values, io) =>
  values
    .command("set")
    .description("create or replace a value set from a YAML file of values (a map); `defaults` takes no selector")
    .argument("<set>", "value set name")
    .requiredOption("-f, --file <file.yaml>", "the values, a YAML map (its lines are what origins name)")
    .option(
      "--selector <selector>",
      "agents it applies to (assignment selector grammar); default: the set's current one",
    )
    .option("--priority <n>", "higher wins among selector-bound sets; default: the set's current one, else 0")
    .option("--description <text>", "default: the set's current one")
    .action(
      action(
        io,
        async (
          ctx,
          name: string,
          opts: { file: string; selector?: string; priority?: string; description?: string },
        ) => {
          const priority = parsePriority(opts.priority);
          const content = await readYaml(opts.file);
          // A replacement keeps what the flags leave out, so changing values does not restate the selector.
          const old = opts.selector === undefined || priority === undefined ? await existing(ctx, name) : undefined;
          const selector = opts.selector ?? old?.selector ?? undefined;
          const body = {
            content,
            ...(selector ? { selector } : {}),
            priority: priority ?? old?.priority ?? 0,
            description: opts.description ?? old?.description ?? "",
          };
          const s = unwrap(await ctx.api.PUT("/api/v1/values/{name}", { ...setPath(name), body }));
          ctx.out.result(s, () =>
            ctx.out.line(
              `${old ? "Replaced" : "Set"} value set ${s.name} (${s.key_count} keys, ${s.selector ?? "defaults"})`,
            ),
          );
        },
      ),
    );

const remove: Sub = (values, io) =>
  values
    .command("rm")
    .alias("remove")
    .description("delete a value set")
    .argument("<set>", "value set name")
    .action(
      action(io, async (ctx, name: string) => {
        unwrap(await ctx.api.DELETE("/api/v1/values/{name}", setPath(name)));
        ctx.out.result({ removed: true, name }, () => ctx.out.line(`Deleted value set ${name}`));
      }),
    );

const agentValues = async (ctx: Context, agent: string) => {
  const node_id = await resolveNodeId(ctx, agent);
  return unwrap(await ctx.api.GET("/api/v1/agents/{node_id}/values", { params: { path: { node_id } } }));
};

const agent: Sub = (values, io) =>
  values
    .command("agent")
    .description("an agent's merged values with the origin (set, line) of every key")
    .argument("<agent>", AGENT_ARG)
    .action(
      action(io, async (ctx, ref: string) => {
        const v = await agentValues(ctx, ref);
        ctx.out.result(v, () => {
          if (!v.origins.length) return ctx.out.line(`no values apply to ${v.name || v.node_id}`);
          ctx.out.table(AGENT_VALUE_COLUMNS, agentValueRows(v));
          ctx.out.note(`layers, lowest first: ${[...v.sets, "agent's own values"].join(" → ")}`);
        });
      }),
    );

const setAgent: Sub = (values, io) =>
  values
    .command("set-agent")
    .description("replace an agent's own values (the highest layer) from a YAML file; an empty map clears them")
    .argument("<agent>", AGENT_ARG)
    .requiredOption("-f, --file <file.yaml>", "the values, a YAML map")
    .action(
      action(io, async (ctx, ref: string, opts: { file: string }) => {
        const content = await readYaml(opts.file);
        const node_id = await resolveNodeId(ctx, ref);
        const v = unwrap(
          await ctx.api.PUT("/api/v1/agents/{node_id}/values", { params: { path: { node_id } }, body: { content } }),
        );
        ctx.out.result(v, () => ctx.out.line(`Set the own values of ${v.name || v.node_id}`));
      }),
    );

const explain: Sub = (values, io) =>
  values
    .command("explain")
    .description("the value an agent gets at a key path, where it comes from, and what it overrode")
    .argument("<agent>", AGENT_ARG)
    .argument("<key.path>", "dotted key path, e.g. nginx.upstreams")
    .action(
      action(io, async (ctx, ref: string, path: string) => {
        const v = await agentValues(ctx, ref);
        const keys = keysFor(v, path);
        if (!keys.length)
          throw new CliError(
            `no value at ${path} for ${v.name || v.node_id} (orchctl values agent lists its keys)`,
            "value_not_found",
          );
        ctx.out.result({ node_id: v.node_id, name: v.name, path, keys }, () => {
          for (const line of explainLines(keys)) ctx.out.line(line);
        });
      }),
    );

export function register(program: Command, io: CliIO): void {
  const values = program
    .command("values")
    .description("layered values: defaults → selector-bound sets by priority → an agent's own values");
  for (const sub of [list, show, set, remove, agent, setAgent, explain]) sub(values, io);
}
