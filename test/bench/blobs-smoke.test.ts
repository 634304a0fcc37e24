// Keeps `npm run bench -- blobs` working: one run at a tiny size (lib/smoke-table.ts), figures by shape only.
import { smokeBench } from "./lib/run-smoke.js";

await smokeBench("blobs");
