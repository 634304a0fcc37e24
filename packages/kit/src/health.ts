import { createServer, type Server } from "node:http";
import { collectDefaultMetrics, Registry } from "prom-client";

export type ReadinessCheck = () => Promise<boolean> | boolean;

export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** `/livez` (process alive), `/readyz` (every check passes), `/metrics` (Prometheus). */
export async function startHealthServer(opts: {
  port: number;
  host: string;
  registry: Registry;
  checks: Record<string, ReadinessCheck>;
}): Promise<{ server: Server; port: number; setDraining(): void; close(): Promise<void> }> {
  let draining = false;
  const server = createServer(async (req, res) => {
    const url = req.url ?? "/";
    if (url === "/livez") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    } else if (url === "/readyz") {
      const results: Record<string, boolean> = {};
      for (const [name, check] of Object.entries(opts.checks)) {
        results[name] = await Promise.race([
          Promise.resolve(check()).catch(() => false),
          new Promise<boolean>((r) => setTimeout(() => r(false), 1000)),
        ]);
      }
      const ok = !draining && Object.values(results).every(Boolean);
      res
        .writeHead(ok ? 200 : 503, { "content-type": "application/json" })
        .end(JSON.stringify({ ready: ok, draining, checks: results }));
    } else if (url === "/metrics") {
      res.writeHead(200, { "content-type": opts.registry.contentType }).end(await opts.registry.metrics());
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host, resolve));
  const addr = server.address();
  return {
    server,
    port: typeof addr === "object" && addr ? addr.port : opts.port,
    setDraining: () => {
      draining = true;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
