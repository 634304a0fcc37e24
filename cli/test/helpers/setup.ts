import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Test } from "tap";
import { cli } from "./cli.js";
import { TestServer, type TestOperator } from "./server.js";

export interface World {
  server: TestServer;
  env: { HOME: string; ORCHCTL_HOME: string; [name: string]: string };
  home: string;
  publicKeyHex: string;
}

/** A started test server plus an isolated HOME / orchctl home (stopped on teardown). */
export async function world(t: Test): Promise<World> {
  const server = new TestServer();
  await server.start();
  t.teardown(() => server.stop());
  const root = t.testdir();
  const home = join(root, "orchctl");
  return { server, env: { HOME: root, ORCHCTL_HOME: home }, home, publicKeyHex: "" };
}

/** world() + keygen + registered operator + login; subsequent commands need no --server. */
export async function loggedIn(t: Test, role: "admin" | "operator" = "admin"): Promise<World & { op: TestOperator }> {
  const w = await world(t);
  const kg = await cli(["keygen"], w.env);
  if (kg.code !== 0) throw new Error(kg.stderr);
  w.publicKeyHex = (await readFile(join(w.home, "id_ed25519.pub"), "utf8")).trim();
  const op = w.server.addOperator("alice", w.publicKeyHex, role);
  const login = await cli(["login", "--server", w.server.url], w.env);
  if (login.code !== 0) throw new Error(login.stderr);
  return { ...w, op };
}
