/** orchctl keygen [--out <path>] [--force] */
import type { Command } from "commander";
import { join } from "node:path";
import { action } from "../context.js";
import { generateKeyFiles } from "../keys/keygen.js";
import type { CliIO } from "../output.js";

export function register(program: Command, io: CliIO): void {
  program
    .command("keygen")
    .description(
      "create an Ed25519 key pair for logging in (PKCS#8 PEM private key + <path>.pub with the hex public key)",
    )
    .option("--out <path>", "private key path (default <home>/id_ed25519)")
    .option("--force", "overwrite existing key files")
    .action(
      action(io, async (ctx, opts: { out?: string; force?: boolean }) => {
        const k = await generateKeyFiles(opts.out ?? join(ctx.home, "id_ed25519"), { force: opts.force });
        const addCommand = `orchctl operators add <name> --public-key ${k.publicKeyHex}`;
        ctx.out.result(
          {
            private_key_path: k.privateKeyPath,
            public_key_path: k.publicKeyPath,
            public_key: k.publicKeyHex,
            add_command: addCommand,
          },
          () => {
            ctx.out.line(`Private key: ${k.privateKeyPath} (mode 0600)`);
            ctx.out.line(`Public key:  ${k.publicKeyPath}`);
            ctx.out.line("");
            ctx.out.line(k.publicKeyHex);
            ctx.out.line("");
            ctx.out.line("An admin adds you as an operator with:");
            ctx.out.line(`  ${addCommand}`);
          },
        );
      }),
    );
}
