/** The agents service as a real process from its dist/, on a plaintext link, for benches that need one. */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { waitForPort, type DbHandle, type NatsHandle } from "@orch/kit/testing";
import { within } from "./sim-fleet.js";

export const AGENTS_SERVICE_MAIN = fileURLToPath(new URL("../../services/agents/dist/main.js", import.meta.url));

/**
 * Plaintext on purpose (ORCH_AGENTS_INSECURE): benches measure the link protocol and the service,
 * comparable with earlier runs; TLS is measured by bench/terminal.ts. `track` is the bench's list of
 * children to stop. Resolves once the link port accepts; `exited` rejects if the service dies.
 */
export async function startAgentsServiceProcess(o: {
  nats: NatsHandle;
  db: DbHandle;
  linkPort: number;
  track(child: ChildProcess): void;
}) {
  const output: string[] = [];
  const child = spawn(process.execPath, [AGENTS_SERVICE_MAIN], {
    env: {
      ...process.env,
      ORCH_AGENTS_INSECURE: "true",
      NATS_URL: o.nats.url,
      ...o.nats.busEnv("agents"),
      DATABASE_URL: o.db.url,
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(o.linkPort),
      ORCH_HEALTH_PORT: "0",
      ORCH_HEALTH_HOST: "127.0.0.1",
      ORCH_LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  o.track(child);
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<never>((_, rej) =>
    child.once("exit", (code) => rej(new Error(`agents service exited (${code}):\n${output.join("").slice(-2000)}`))),
  );
  exited.catch(() => {});
  await within(Promise.race([waitForPort(o.linkPort, 60_000), exited]), 65_000, "agents service link port");
  return { child, output, exited };
}
