import { execFile, spawn, type ChildProcess } from "node:child_process";
import { promisify } from "node:util";
import { startTcpLoadBalancer, type TcpLoadBalancer } from "./tcp-lb.js";

// Test "machines": each host is a network namespace on one Linux bridge, so every host reaches the
// test machine at the same address (10.<a>.<b>.1) and one public URL serves them all. Hosts are
// .2, .3, …; the subnet is derived from our pid so parallel test processes do not clash. The
// services listen on 127.0.0.1, so forwarders on the bridge address relay to their loopback ports
// (same port numbers, different address).

const exec = promisify(execFile);
const ip = (...args: string[]) => exec("ip", args);

export interface NetHost {
  index: number;
  /** Network namespace name, `orch-t<pid>-<i>`. */
  ns: string;
  /** This host's address on the bridge. */
  addr: string;
}

export interface TestNet {
  /** The test machine's address as the hosts see it. */
  hostAddr: string;
  hosts: NetHost[];
  /** Relays hostAddr:listenPort (default: the same number) to 127.0.0.1:port, where a service listens. */
  forward(port: number, listenPort?: number): Promise<TcpLoadBalancer>;
  /**
   * Partitions host `h`: its bridge port is disabled (STP port state), so every frame to
   * or from it vanishes while both links stay up. TCP peers see silence, not a reset or an
   * unreachable network, as when a switch or a route between two machines fails.
   */
  cut(h: NetHost): Promise<void>;
  /** Heals a cut: the bridge port forwards again. */
  restore(h: NetHost): Promise<void>;
  close(): Promise<void>;
}

const PREFIX = "orch-t";

function subnet(pid: number): string {
  return `10.${64 + (pid % 128)}.${Math.floor(pid / 128) % 256}`;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Namespaces and bridges left by test processes that died before their teardown ran. */
async function sweepStale(): Promise<void> {
  const { stdout } = await ip("netns", "list").catch(() => ({ stdout: "" }));
  for (const line of stdout.split("\n")) {
    const m = new RegExp(`^${PREFIX}(\\d+)-\\d+`).exec(line.trim());
    if (!m || alive(Number(m[1]))) continue;
    // Its agents outlive the test process (they are in their own process group): end them first.
    const pids = await ip("netns", "pids", m[0]).catch(() => ({ stdout: "" }));
    for (const p of pids.stdout.split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(p), "SIGKILL");
      } catch {}
    }
    await ip("netns", "del", m[0]).catch(() => undefined);
  }
  const links = await ip("-o", "link", "show", "type", "bridge").catch(() => ({ stdout: "" }));
  for (const m of links.stdout.matchAll(/\d+: (ob(\d+)):/g))
    if (!alive(Number(m[2]))) await ip("link", "del", m[1]!).catch(() => undefined);
}

/**
 * Sets a bridge port's STP state and reads it back: the kernel accepts some states without applying
 * them (here "blocking" while STP is off). Without STP it changes a port's state only on a carrier
 * change, which a veth whose peer stays up never has, so the state holds until set again.
 */
async function setPortState(port: string, state: "disabled" | "forwarding"): Promise<void> {
  await exec("bridge", ["link", "set", "dev", port, "state", state === "disabled" ? "0" : "3"]);
  const { stdout } = await exec("bridge", ["link", "show", "dev", port]);
  if (!stdout.includes(`state ${state}`)) throw new Error(`bridge port ${port} did not become ${state}: ${stdout}`);
}

export async function createTestNet(count: number): Promise<TestNet> {
  await sweepStale();
  const pid = process.pid;
  const net = subnet(pid);
  const bridge = `ob${pid}`;
  const hostAddr = `${net}.1`;
  const hosts: NetHost[] = [];
  const forwarders: TcpLoadBalancer[] = [];

  const close = async () => {
    for (const f of forwarders.splice(0)) await f.close().catch(() => undefined);
    // Deleting a namespace deletes its veth end, and with it the pair.
    for (const h of hosts) await ip("netns", "del", h.ns).catch(() => undefined);
    for (const h of hosts) await ip("link", "del", `ov${pid}-${h.index}`).catch(() => undefined);
    await ip("link", "del", bridge).catch(() => undefined);
  };

  try {
    await ip("link", "add", bridge, "type", "bridge");
    await ip("addr", "add", `${hostAddr}/24`, "dev", bridge);
    await ip("link", "set", bridge, "up");
    for (let i = 1; i <= count; i++) {
      const h: NetHost = { index: i, ns: `${PREFIX}${pid}-${i}`, addr: `${net}.${i + 1}` };
      const outer = `ov${pid}-${i}`;
      await ip("netns", "add", h.ns);
      hosts.push(h);
      await ip("link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", h.ns);
      await ip("link", "set", outer, "master", bridge, "up");
      await ip("-n", h.ns, "addr", "add", `${h.addr}/24`, "dev", "eth0");
      await ip("-n", h.ns, "link", "set", "eth0", "up");
      await ip("-n", h.ns, "link", "set", "lo", "up");
      await ip("-n", h.ns, "route", "add", "default", "via", hostAddr);
    }
  } catch (err) {
    await close();
    throw err;
  }

  return {
    hostAddr,
    hosts,
    async forward(port, listenPort = port) {
      const f = await startTcpLoadBalancer({
        backends: [{ host: "127.0.0.1", port }],
        host: hostAddr,
        port: listenPort,
      });
      forwarders.push(f);
      return f;
    },
    cut: (h) => setPortState(`ov${pid}-${h.index}`, "disabled"),
    restore: (h) => setPortState(`ov${pid}-${h.index}`, "forwarding"),
    close,
  };
}

export interface RootProcess {
  child: ChildProcess;
  output: string[];
  /** Resolves with the exit code (or 128+signal). */
  exited: Promise<number>;
  kill(): Promise<void>;
}

/**
 * Runs argv chrooted into `root`, in host `h`'s network namespace, in fresh mount, pid and UTS
 * namespaces: proc (of the new pid namespace), /dev and /sys are mounted there privately, so they
 * vanish with the last process and never touch the host's mount table. `--kill-child` takes the
 * whole namespace down when the unshare process is killed.
 */
export function spawnInRoot(
  h: NetHost,
  root: string,
  argv: string[],
  opts: { hostname?: string; env?: Record<string, string> } = {},
): RootProcess {
  const setup = [
    "set -e",
    'r=$1; hn=$2; shift 2; mount -t proc proc "$r/proc"',
    'mount --rbind /dev "$r/dev"',
    'mount -t sysfs sysfs "$r/sys" 2>/dev/null || true',
    'hostname "$hn"',
    'exec chroot "$r" "$@"',
  ].join("\n");
  // `env -i`: the test runner injects NODE_OPTIONS (tap's process-info loader) into every child's
  // environment, and the root's bundled node would try to load it from a path it cannot see.
  const env = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: "/root",
    LANG: "C",
    ...opts.env,
  };
  const child = spawn(
    "env",
    [
      "-i",
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      "ip",
      "netns",
      "exec",
      h.ns,
      "unshare",
      "--mount",
      "--propagation",
      "private",
      "--pid",
      "--uts",
      "--fork",
      "--kill-child",
      "sh",
      "-c",
      setup,
      "sh",
      root,
      opts.hostname ?? `host${h.index}`,
      ...argv,
    ],
    {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
  const output: string[] = [];
  child.stdout!.on("data", (d: Buffer) => output.push(d.toString()));
  child.stderr!.on("data", (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<number>((resolve) =>
    child.once("exit", (code, sig) => resolve(code ?? 128 + (sig === "SIGKILL" ? 9 : 15))),
  );
  return {
    child,
    output,
    exited,
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // The process group: ip → unshare (→ its pid namespace dies with its first process).
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
      await exited;
    },
  };
}

/** Runs a shell command in the root and collects its exit code and output (bounded by timeoutMs). */
export async function shInRoot(
  h: NetHost,
  root: string,
  script: string,
  opts: { hostname?: string; timeoutMs?: number } = {},
): Promise<{ code: number; out: string }> {
  const p = spawnInRoot(h, root, ["/bin/sh", "-c", script], opts);
  const timer = setTimeout(() => void p.kill(), opts.timeoutMs ?? 120_000);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, out: p.output.join("") };
}
