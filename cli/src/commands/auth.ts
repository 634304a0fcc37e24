/** orchctl login | logout | whoami */
import type { Command } from "commander";
import { unwrap, type Challenge, type Verified } from "@orch/client";
import { deleteSession, writeSession, type Session } from "../config.js";
import { action, type Context } from "../context.js";
import { operatorNames } from "../operator-names.js";
import { CliError, ProblemError } from "../errors.js";
import { operatorLine, whoamiFields } from "../format/operators.js";
import { serverClient } from "../http.js";
import { loadSigners, type Signer } from "../keys/index.js";
import type { CliIO } from "../output.js";
import { count } from "../format/units.js";
import { ssoLogin } from "./sso.js";

/** Challenge → sign the raw nonce bytes → verify. Returns the new session (not yet stored). */
export async function authenticate(ctx: Context, server: string, signer: Signer): Promise<Session> {
  const api = serverClient(server, { timeoutMs: ctx.timeoutMs });
  const public_key = signer.publicKeyHex;
  let ch: Partial<Challenge> | undefined;
  try {
    // Checked below although typed: a server that is not an orchestrator may answer anything.
    ch = unwrap(await api.POST("/api/v1/auth/challenge", { body: { public_key } }));
  } catch (err) {
    throw unknownKeyHint(err, server, signer);
  }
  if (typeof ch?.nonce !== "string" || !/^[0-9a-fA-F]{64}$/.test(ch.nonce)) {
    throw new CliError(`${server} sent an invalid challenge (nonce must be 64 hex characters)`, "bad_response");
  }
  const signature = Buffer.from(await signer.sign(Buffer.from(ch.nonce, "hex"))).toString("hex");
  const v: Partial<Verified> | undefined = unwrap(
    await api.POST("/api/v1/auth/verify", { body: { public_key, nonce: ch.nonce, signature } }),
  );
  if (typeof v?.token !== "string" || !v.token || typeof v.operator !== "object" || v.operator === null) {
    throw new CliError(`${server} sent an invalid verify response`, "bad_response");
  }
  // Stored as sent: an absent expires_at is judged by sessionExpired (config.ts).
  return { server, token: v.token, expires_at: v.expires_at as string, operator: v.operator };
}

/**
 * The server refuses a key no active operator holds before anything is signed: say which key and
 * what to do, keeping the server's problem for --json.
 */
function unknownKeyHint(err: unknown, server: string, signer: Signer): unknown {
  if (!(err instanceof ProblemError) || err.code !== "unknown_operator") return err;
  const key = signer.publicKeyHex;
  return new ProblemError(
    err.problem,
    `${server} has no active operator with the public key ${key} (${signer.source}); an admin adds one with \`orchctl operators add <name> --public-key ${key}\``,
  );
}

/** Problems meaning "this key is not accepted", after which the next agent key is worth trying. */
function keyRejected(err: unknown): err is ProblemError {
  return err instanceof ProblemError && [401, 403, 404].includes(err.status);
}

type Sub = (parent: Command, io: CliIO) => void;

const login: Sub = (program, io) =>
  program
    .command("login")
    .description("authenticate with an Ed25519 key (or --sso, an identity provider) and store the session token")
    .option("--key <path>", "private key (PKCS#8 PEM or OpenSSH), or a public key file choosing an ssh-agent key")
    .option("--ssh-agent", "sign with a key held by ssh-agent ($SSH_AUTH_SOCK)")
    .option(
      "--sso [provider]",
      "sign in through an identity provider (device flow when offered, else a loopback redirect); the provider may be left out when only one is enabled",
    )
    .option("--open", "with --sso: open the sign-in URL in a browser")
    .option("--loopback", "with --sso: use the loopback redirect even when the provider offers the device flow")
    .action(
      action(io, async (ctx, opts: LoginOptions) => {
        if (opts.sso !== undefined && (opts.key || opts.sshAgent))
          throw new CliError("--sso signs in without a key: drop --key / --ssh-agent", "invalid_argument");
        const server = await ctx.orch.server();
        const session =
          opts.sso !== undefined
            ? await ssoLogin(ctx, server, {
                provider: typeof opts.sso === "string" ? opts.sso : undefined,
                open: opts.open,
                loopback: opts.loopback,
              })
            : await keyLogin(ctx, server, opts);
        const path = await writeSession(ctx.home, session);
        ctx.out.result(
          { server: session.server, expires_at: session.expires_at, operator: session.operator, session_file: path },
          () =>
            ctx.out.line(
              `Logged in to ${session.server} as ${operatorLine(session.operator)}, token expires ${session.expires_at}`,
            ),
        );
      }),
    );

interface LoginOptions {
  key?: string;
  sshAgent?: boolean;
  sso?: string | boolean;
  open?: boolean;
  loopback?: boolean;
}

/** Tries each key the options name (or ssh-agent holds) until the server accepts one. */
async function keyLogin(ctx: Context, server: string, opts: LoginOptions): Promise<Session> {
  const signers = await loadSigners({
    key: opts.key,
    sshAgent: opts.sshAgent,
    home: ctx.home,
    env: ctx.env,
    timeoutMs: ctx.timeoutMs,
  });
  let session: Session | undefined;
  const rejected: string[] = [];
  let last: ProblemError | undefined;
  for (const signer of signers) {
    try {
      session = await authenticate(ctx, server, signer);
      break;
    } catch (err) {
      if (signers.length === 1 || !keyRejected(err)) throw err;
      last = err;
      // Each line names its key already: the server's own words are enough.
      rejected.push(`  ${signer.publicKeyHex} ${signer.source}: ${err.problem.detail}`);
    }
  }
  if (!session) {
    throw new CliError(
      `${server} accepted none of the ${count(signers.length, "Ed25519 key")} in ssh-agent:\n${rejected.join("\n")}`,
      last?.code ?? "login_failed",
    );
  }
  return session;
}

const logout: Sub = (program, io) =>
  program
    .command("logout")
    .description("revoke the session token and delete the stored session")
    .action(
      action(io, async (ctx) => {
        const session = await ctx.orch.session();
        if (!session) {
          ctx.out.result({ logged_out: false, reason: "not logged in" }, () => ctx.out.line("Not logged in"));
          return;
        }
        let failure: unknown;
        try {
          const api = serverClient(session.server, { token: session.token, timeoutMs: ctx.timeoutMs });
          unwrap(await api.POST("/api/v1/auth/logout"));
        } catch (err) {
          // 401: the token is already expired or revoked, which is what logging out wants.
          if (!(err instanceof ProblemError && err.status === 401)) failure = err;
        }
        await deleteSession(ctx.home);
        if (failure) {
          const why = failure instanceof Error ? failure.message : String(failure);
          throw new CliError(
            `removed the local session, but ${session.server} could not revoke the token: ${why}`,
            (failure as CliError).code ?? "logout_failed",
          );
        }
        ctx.out.result({ logged_out: true, server: session.server }, () =>
          ctx.out.line(`Logged out of ${session.server}`),
        );
      }),
    );

const whoami: Sub = (program, io) =>
  program
    .command("whoami")
    .description("show the operator of the current session")
    .action(
      action(io, async (ctx) => {
        const op = unwrap(await ctx.api.GET("/api/v1/auth/whoami"));
        const server = await ctx.orch.server();
        const names = await operatorNames(ctx);
        ctx.out.result(op, () => ctx.out.fields(whoamiFields(op, server, names)));
      }),
    );

export function register(program: Command, io: CliIO): void {
  for (const sub of [login, logout, whoami]) sub(program, io);
}
