import { readFileSync } from "node:fs";

/** orch-agent's version, from its package.json (one level above both src/ and dist/). */
export const AGENT_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
      .version;
  } catch {
    return "0.0.0";
  }
})();
