import t from "tap";
import { DEFAULT_DATA_DIR, UsageError, parseOptions } from "../src/options.js";

t.test("unit: defaults", async (t) => {
  const o = parseOptions(["--server", "orch.example:7443"], {});
  t.match(o, { server: "orch.example:7443", dataDir: DEFAULT_DATA_DIR, discover: false, discoveryPort: 7444, terminalEnabled: true, metricsIntervalSeconds: 15, tls: undefined, logLevel: "info" });
  t.ok(typeof o === "object" && o.shells.length === 1 && o.shells[0]!.startsWith("/bin/"));
});

t.test("unit: every flag, and flags win over the environment", async (t) => {
  const env = { ORCH_AGENT_SERVER: "env-host:1", ORCH_AGENT_DATA_DIR: "/env", ORCH_AGENT_METRICS_INTERVAL: "30" };
  const o = parseOptions(["--server", "[::1]:7443", "--data-dir", "/d", "--discover", "--discovery-port", "9000", "--no-terminal", "--metrics-interval", "1", "--tls", "--shell", "/bin/zsh", "--shell", "/bin/sh", "--log-level", "warn"], env);
  t.match(o, { server: "[::1]:7443", dataDir: "/d", discover: true, discoveryPort: 9000, terminalEnabled: false, metricsIntervalSeconds: 1, tls: { insecure: false }, shells: ["/bin/zsh", "/bin/sh"], logLevel: "warn" });
});

t.test("unit: environment equivalents", async (t) => {
  const o = parseOptions([], { ORCH_AGENT_SERVER: "h:2", ORCH_AGENT_DATA_DIR: "/e", ORCH_AGENT_DISCOVER: "true", ORCH_AGENT_DISCOVERY_PORT: "7555", ORCH_AGENT_NO_TERMINAL: "1", ORCH_AGENT_METRICS_INTERVAL: "5", ORCH_AGENT_TLS: "yes", ORCH_AGENT_SHELLS: "/bin/a:/bin/b", ORCH_AGENT_LOG_LEVEL: "debug" });
  t.match(o, { server: "h:2", dataDir: "/e", discover: true, discoveryPort: 7555, terminalEnabled: false, metricsIntervalSeconds: 5, tls: { insecure: false }, shells: ["/bin/a", "/bin/b"], logLevel: "debug" });
});

t.test("unit: bad values are usage errors naming the flag", async (t) => {
  const bad: Array<[string[], RegExp]> = [
    [["--server", "nohost"], /--server/],
    [["--server", "h:70000"], /--server/],
    [["--discovery-port", "0"], /--discovery-port/],
    [["--metrics-interval", "0"], /--metrics-interval/],
    [["--metrics-interval", "abc"], /--metrics-interval/],
    [["--shell", "bash"], /--shell/],
    [["--log-level", "loud"], /--log-level/],
    [["--tls-ca", "/nonexistent/ca.pem"], /--tls-ca/],
    [["--bogus"], /bogus/],
  ];
  for (const [argv, re] of bad) {
    let err: unknown;
    try {
      parseOptions(argv, {});
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof UsageError, `${argv.join(" ")} is a usage error`);
    t.match((err as Error).message, re);
  }
  t.equal(parseOptions(["--help"], {}), "help");
  t.equal(parseOptions(["--version"], {}), "version");
});
