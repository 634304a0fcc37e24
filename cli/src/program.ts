/**
 * The orchctl program: global options, command groups, error reporting.
 *
 * Adding a command group: write `src/commands/<group>.ts` exporting
 * `register(program: Command, io: CliIO): void` (see commands/status.ts for the smallest one and
 * the header of http.ts for the API client), then add it to `commandGroups` below. Handlers are
 * wrapped with `action(io, async (ctx, ...args) => ...)` from context.ts, which gives them the
 * resolved global options, `ctx.api(...)` and `ctx.out`. Throw `CliError` (or let `ProblemError`
 * from the API propagate); `run` prints it and exits 1.
 */
import { Command, CommanderError, Option } from "commander";
import { readFileSync } from "node:fs";
import { DEFAULT_SERVER } from "./config.js";
import { CliError, ExitStatus, errorLine } from "./errors.js";
import type { CliIO } from "./output.js";
import { register as registerAgents } from "./commands/agents.js";
import { register as registerApprovalPolicies } from "./commands/approval-policies.js";
import { register as registerAudit } from "./commands/audit.js";
import { register as registerAuth } from "./commands/auth.js";
import { register as registerChannels } from "./commands/channels.js";
import { register as registerConsole } from "./commands/console.js";
import { register as registerMaintenance } from "./commands/maintenance.js";
import { register as registerNotifications } from "./commands/notifications.js";
import { register as registerDiscover } from "./commands/discover.js";
import { register as registerIdentityProviders } from "./commands/identity-providers.js";
import { register as registerJoinTokens } from "./commands/join-tokens.js";
import { register as registerKeygen } from "./commands/keygen.js";
import { register as registerOperators } from "./commands/operators.js";
import { register as registerPasskeys } from "./commands/passkeys.js";
import { register as registerRequests } from "./commands/requests.js";
import { register as registerAccess } from "./commands/access.js";
import { register as registerRuns } from "./commands/runs.js";
import { register as registerSecrets } from "./commands/secrets.js";
import { register as registerSources } from "./commands/sources.js";
import { register as registerSsh } from "./commands/ssh.js";
import { register as registerSso } from "./commands/sso.js";
import { register as registerState } from "./commands/state.js";
import { register as registerStatus } from "./commands/status.js";
import { register as registerTags } from "./commands/tags.js";
import { register as registerTerminal } from "./commands/terminal.js";

export type RegisterFn = (program: Command, io: CliIO) => void;

/** Command groups in help order. */
export const commandGroups: RegisterFn[] = [
  registerKeygen,
  registerAuth,
  registerConsole,
  registerPasskeys,
  registerStatus,
  registerOperators,
  registerIdentityProviders,
  registerSso,
  registerApprovalPolicies,
  registerRequests,
  registerAccess,
  registerAgents,
  registerJoinTokens,
  registerTags,
  registerDiscover,
  registerSecrets,
  registerChannels,
  registerNotifications,
  registerMaintenance,
  registerSsh,
  registerTerminal,
  registerState,
  registerSources,
  registerAudit,
  registerRuns,
];

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string };
    return pkg.version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}

/** Builds a fresh program writing to `io` (never calls process.exit; errors are thrown). */
export function buildProgram(io: CliIO, extraGroups: RegisterFn[] = []): Command {
  const program = new Command("orchctl");
  program
    .description("operator CLI for the fleet orchestrator")
    .version(version(), "-V, --version")
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
    })
    .showHelpAfterError("(run orchctl --help for usage)")
    .addOption(
      new Option(
        "--server <url>",
        `orchestrator URL (env ORCH_URL; default: the logged-in server, else ${DEFAULT_SERVER})`,
      ),
    )
    .addOption(new Option("--json", "machine-readable output: exactly one JSON document on stdout"))
    .addOption(new Option("--home <dir>", "orchctl state directory (env ORCHCTL_HOME; default ~/.config/orchctl)"))
    .addOption(new Option("--timeout <seconds>", "HTTP request timeout (env ORCH_TIMEOUT; default 10)"));
  for (const register of [...commandGroups, ...extraGroups]) register(program, io);
  return program;
}

/** Prints an error the orchctl way: `error: <detail> (<code>)` on stderr, the problem on stdout with --json. */
export function reportError(err: unknown, io: CliIO, json: boolean): void {
  let e: CliError;
  if (err instanceof CliError) e = err;
  else {
    const errno = (err as NodeJS.ErrnoException | undefined)?.code;
    e = new CliError(
      err instanceof Error ? err.message : String(err),
      typeof errno === "string" ? errno.toLowerCase() : "internal",
    );
  }
  const [first, ...rest] = e.message.split("\n");
  io.stderr.write(`${errorLine(first ?? "", e.code)}\n${rest.map((l) => `${l}\n`).join("")}`);
  if (json) io.stdout.write(`${JSON.stringify(e.toProblem(), null, 2)}\n`);
}

/** Runs orchctl with user arguments (no node/script prefix); resolves to the exit code. */
export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: "user" });
    return 0;
  } catch (err) {
    const json = Boolean(program.opts<{ json?: boolean }>().json) || argv.includes("--json");
    if (err instanceof CommanderError) {
      // commander already printed the message to stderr; keep the one-JSON-document promise.
      if (json && err.exitCode !== 0) {
        const detail = err.message.replace(/^error: /, "");
        io.stdout.write(
          `${JSON.stringify({ type: "about:blank", title: "usage error", detail, code: "usage_error" }, null, 2)}\n`,
        );
      }
      return err.exitCode;
    }
    if (err instanceof ExitStatus) {
      if (!json && err.message) reportError(err, io, false);
      return err.exitCode;
    }
    reportError(err, io, json);
    return err instanceof CliError ? err.exitCode : 1;
  }
}
