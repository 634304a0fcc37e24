// Writes packages/contracts/asyncapi.json, the AsyncAPI document of the audit events on NATS:
// `npx tsx scripts/gen-asyncapi.ts` (or `npm run generate:asyncapi`). test/asyncapi.test.ts fails
// when the committed file differs from what this writes. Sources, not dist: a stale build cannot
// leak into the committed document.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildAsyncApi } from "../packages/contracts/src/asyncapi.ts";
import { AUDIT_STREAM, auditSubject } from "../packages/kit/src/outbox.ts";

export const ASYNCAPI_FILE = fileURLToPath(new URL("../packages/contracts/asyncapi.json", import.meta.url));

export const renderAsyncApi = (): string =>
  `${JSON.stringify(buildAsyncApi({ stream: AUDIT_STREAM, subject: auditSubject }), null, 2)}\n`;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(ASYNCAPI_FILE, renderAsyncApi());
  console.log(`wrote ${ASYNCAPI_FILE}`);
}
