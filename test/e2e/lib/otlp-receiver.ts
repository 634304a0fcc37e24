// An in-process OTLP/HTTP trace receiver: what a collector would see from the processes under test.
// The exporter (@opentelemetry/exporter-trace-otlp-http) posts JSON to <endpoint>/v1/traces, ids as
// hex strings (the OTLP JSON encoding).
import { createServer } from "node:http";
import { gunzipSync } from "node:zlib";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** The exporting process's resource `service.name`. */
  service: string;
  attributes: Record<string, string | number | boolean>;
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value?: AnyValue };
interface ExportRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
      }[];
    }[];
  }[];
}

const anyValue = (v: AnyValue | undefined) =>
  v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : (v?.doubleValue ?? v?.boolValue ?? ""));
const attrs = (kvs: KeyValue[] | undefined) =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, anyValue(kv.value)]));

export interface OtlpReceiver {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for the processes under test. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Every span of one trace. */
  trace(traceId: string): ReceivedSpan[];
  stop(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      try {
        let body = Buffer.concat(chunks);
        if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
        const data = JSON.parse(body.toString("utf8")) as ExportRequest;
        for (const rs of data.resourceSpans ?? []) {
          const service = String(attrs(rs.resource?.attributes)["service.name"] ?? "");
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? "",
                name: s.name,
                kind: s.kind ?? 0,
                service,
                attributes: attrs((s as { attributes?: KeyValue[] }).attributes),
              });
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } catch {
        // Only JSON is expected; anything else (e.g. protobuf) is a misconfigured exporter.
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    trace: (traceId) => spans.filter((s) => s.traceId === traceId),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
