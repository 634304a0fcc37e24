import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The deployment's bus users on a test server: deploy/nats/permissions.mjs rendered by
 * deploy/nats/generate.mjs (the one source, shared with `npm run up`), with random passwords, so
 * a service under test connects as its own user and a subject missing from its permissions fails
 * the test instead of the deployment.
 */

/** The test clients' user (probes, observers, stand-ins): every right. Never in a deployment. */
export const TEST_BUS_USER = "orch-test";

export interface BusCredentials {
  user: string;
  password: string;
}

interface Generator {
  randomPasswords(existing?: Record<string, string>): Record<string, string>;
  renderDevConf(
    passwords: Record<string, string>,
    extraUsers?: Array<{ name: string; password: string; note: string }>,
  ): string;
}

// Loaded at run time from the repository (src/testing and dist/testing sit at the same depth): the
// generator is plain JavaScript outside this package.
const generator = (await import(new URL("../../../../deploy/nats/generate.mjs", import.meta.url).href)) as Generator;

export interface TestBus {
  /** The server configuration file (mode 0600). */
  configFile: string;
  /** A service's own user for a service name, the test user for any other client name. */
  credentials(name: string): BusCredentials;
  /** ORCH_NATS_USER / ORCH_NATS_PASSWORD of a service process; throws for a name without a bus user. */
  serviceEnv(service: string): Record<string, string>;
}

/** Writes the configuration of a test server with the deployment's users into `dir`. */
export function createTestBus(dir: string): TestBus {
  const passwords = generator.randomPasswords();
  const testPassword = randomBytes(24).toString("base64url");
  const configFile = join(dir, "bus.conf");
  writeFileSync(
    configFile,
    generator.renderDevConf(passwords, [
      { name: TEST_BUS_USER, password: testPassword, note: "test clients (probes, observers): every right" },
    ]),
    { mode: 0o600 },
  );
  const serviceEnv = (service: string) => {
    const password = passwords[service];
    if (!password) throw new Error(`${service} has no bus user in deploy/nats/permissions.mjs`);
    return { ORCH_NATS_USER: service, ORCH_NATS_PASSWORD: password };
  };
  return {
    configFile,
    credentials: (name) =>
      passwords[name] ? { user: name, password: passwords[name] } : { user: TEST_BUS_USER, password: testPassword },
    serviceEnv,
  };
}
