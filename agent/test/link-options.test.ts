import t from "tap";
import { DEFAULT_DATA_DIR, UsageError, parseOptions } from "../src/options.js";

t.test("unit: defaults", async (t) => {
  const o = parseOptions(["--server", "orch.example:7443"], {});
  t.match(o, {
    server: "orch.example:7443",
    dataDir: DEFAULT_DATA_DIR,
    discover: false,
    discoveryPort: 7444,
    terminalEnabled: true,
    metricsIntervalSeconds: 15,
    trust: { kind: "system" },
    logLevel: "info",
  });
  t.ok(typeof o === "object" && o.shells.length === 1 && o.shells[0]!.startsWith("/bin/"));
});

t.test("unit: every flag, and flags win over the environment", async (t) => {
  const env = { ORCH_AGENT_SERVER: "env-host:1", ORCH_AGENT_DATA_DIR: "/env", ORCH_AGENT_METRICS_INTERVAL: "30" };
  const o = parseOptions(
    [
      "--server",
      "[::1]:7443",
      "--data-dir",
      "/d",
      "--discover",
      "--discovery-port",
      "9000",
      "--no-terminal",
      "--metrics-interval",
      "1",
      "--tls",
      "--shell",
      "/bin/zsh",
      "--shell",
      "/bin/sh",
      "--log-level",
      "warn",
    ],
    env,
  );
  t.match(o, {
    server: "[::1]:7443",
    dataDir: "/d",
    discover: true,
    discoveryPort: 9000,
    terminalEnabled: false,
    metricsIntervalSeconds: 1,
    trust: { kind: "system" },
    shells: ["/bin/zsh", "/bin/sh"],
    logLevel: "warn",
  });
});

t.test("unit: environment equivalents", async (t) => {
  const o = parseOptions([], {
    ORCH_AGENT_SERVER: "h:2",
    ORCH_AGENT_DATA_DIR: "/e",
    ORCH_AGENT_DISCOVER: "true",
    ORCH_AGENT_DISCOVERY_PORT: "7555",
    ORCH_AGENT_NO_TERMINAL: "1",
    ORCH_AGENT_METRICS_INTERVAL: "5",
    ORCH_AGENT_TLS: "yes",
    ORCH_AGENT_SHELLS: "/bin/a:/bin/b",
    ORCH_AGENT_LOG_LEVEL: "debug",
  });
  t.match(o, {
    server: "h:2",
    dataDir: "/e",
    discover: true,
    discoveryPort: 7555,
    terminalEnabled: false,
    metricsIntervalSeconds: 5,
    trust: { kind: "system" },
    shells: ["/bin/a", "/bin/b"],
    logLevel: "debug",
  });
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
    [["--tls-ca", "/nonexistent/ca.pem"], /--ca/],
    [["--ca", "/nonexistent/ca.pem"], /--ca/],
    [["--server-fingerprint", "sha256:abcd"], /--server-fingerprint/],
    [["--server-fingerprint", `md5:${"a".repeat(64)}`], /--server-fingerprint/],
    [["--insecure", "--server-fingerprint", `sha256:${"a".repeat(64)}`], /exclude each other/],
    [["--insecure", "--tls"], /exclude each other/],
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

t.test("unit: how the server is trusted: one of --ca, --server-fingerprint, --insecure; TLS by default", async (t) => {
  const pin = `sha256:${"ab".repeat(32)}`;
  const caFile = process.execPath; // any existing file: the CA is read when connecting
  t.match(
    parseOptions(["--server", "h:1"], {}),
    { trust: { kind: "system" } },
    "no flag = TLS verified by the system CAs, never plaintext",
  );
  t.match(parseOptions(["--ca", caFile], {}), { trust: { kind: "ca", caFile } });
  t.match(
    parseOptions(["--tls-ca", caFile], {}),
    { trust: { kind: "ca", caFile } },
    "--tls-ca is the old name of --ca",
  );
  t.match(parseOptions([], { ORCH_AGENT_CA: caFile }), { trust: { kind: "ca", caFile } });
  t.match(parseOptions([], { ORCH_AGENT_TLS_CA: caFile }), { trust: { kind: "ca", caFile } });
  t.match(parseOptions(["--server-fingerprint", pin], {}), { trust: { kind: "pin", fingerprint: pin } });
  const colons = "AB:".repeat(32).slice(0, -1);
  t.match(
    parseOptions(["--server-fingerprint", colons], {}),
    { trust: { kind: "pin", fingerprint: pin } },
    "openssl's AB:CD:… form is accepted",
  );
  t.match(parseOptions([], { ORCH_AGENT_SERVER_FINGERPRINT: pin.toUpperCase() }), {
    trust: { kind: "pin", fingerprint: pin },
  });
  t.match(parseOptions(["--insecure"], {}), { trust: { kind: "insecure" } }, "plaintext only with --insecure");
  t.match(parseOptions([], { ORCH_AGENT_INSECURE: "true" }), { trust: { kind: "insecure" } });
  t.throws(
    () => parseOptions(["--ca", caFile], { ORCH_AGENT_INSECURE: "1" }),
    /exclude each other/,
    "a flag and an env var of different kinds conflict",
  );
  t.throws(() => parseOptions(["--ca", caFile, "--tls-ca", caFile], {}), /same option/);
});
