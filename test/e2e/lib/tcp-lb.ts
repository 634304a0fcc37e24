import { connect, createServer, type Socket } from "node:net";

// Test infrastructure standing in for the cloud LoadBalancer Service (`agents-link` in
// deploy/k8s) that fronts the agents replicas' link port in Kubernetes. It is a plain TCP relay:
// round-robin over the backends, a backend whose connect fails is skipped for that connection.

export interface Backend {
  host: string;
  port: number;
}

export interface TcpLoadBalancer {
  port: number;
  /** Connections relayed to each backend so far, keyed "host:port". */
  relayed(): Record<string, number>;
  /** Connections refused because no backend accepted them. */
  refused(): number;
  close(): Promise<void>;
}

const key = (b: Backend) => `${b.host}:${b.port}`;

/** Connects to `b`, resolving undefined when it refuses or does not answer in time. */
function dial(b: Backend, timeoutMs: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = connect({ host: b.host, port: b.port });
    const fail = () => {
      s.destroy();
      resolve(undefined);
    };
    const timer = setTimeout(fail, timeoutMs);
    s.once("error", () => {
      clearTimeout(timer);
      fail();
    });
    s.once("connect", () => {
      clearTimeout(timer);
      s.removeAllListeners("error");
      resolve(s);
    });
  });
}

export async function startTcpLoadBalancer(opts: {
  backends: Backend[];
  host?: string;
  port?: number;
  connectTimeoutMs?: number;
}): Promise<TcpLoadBalancer> {
  const host = opts.host ?? "127.0.0.1";
  const connectTimeoutMs = opts.connectTimeoutMs ?? 2000;
  const counts: Record<string, number> = Object.fromEntries(opts.backends.map((b) => [key(b), 0]));
  const open = new Set<Socket>();
  let next = 0;
  let refused = 0;

  const track = (s: Socket) => {
    open.add(s);
    s.once("close", () => open.delete(s));
  };

  async function relay(client: Socket) {
    track(client);
    // Hold what the client sends (e.g. the HTTP/2 preface) until a backend is connected.
    client.pause();
    client.on("error", () => client.destroy());
    const start = next++ % opts.backends.length;
    for (let i = 0; i < opts.backends.length; i++) {
      const b = opts.backends[(start + i) % opts.backends.length]!;
      const upstream = await dial(b, connectTimeoutMs);
      if (!upstream) continue;
      if (client.destroyed) {
        upstream.destroy();
        return;
      }
      track(upstream);
      counts[key(b)] = (counts[key(b)] ?? 0) + 1;
      // Either side going away takes the other with it, as a cloud LB's TCP flow would.
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      upstream.once("close", () => client.destroy());
      client.once("close", () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      return;
    }
    refused++;
    client.destroy();
  }

  const server = createServer((client) => void relay(client));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;

  return {
    port,
    relayed: () => ({ ...counts }),
    refused: () => refused,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of open) s.destroy();
      await closed;
    },
  };
}
