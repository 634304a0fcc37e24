// Components call the typed hooks in web/src/api; only that folder knows URLs or the raw client. This
// keeps CSRF, the 401 redirect and the gateway banner in one place (web/src/api/client.ts).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

const outside = sources(SRC).filter((f) => !relative(SRC, f).startsWith("api/"));

t.ok(outside.length > 5, "found the console's pages and UI files");
for (const file of outside) {
  const text = readFileSync(file, "utf8");
  const name = relative(SRC, file);
  t.notMatch(text, /["'`]\/api\//, `${name}: no API URLs outside web/src/api`);
  // Components (pages, shared UI) never open a request themselves; helpers in lib/ may take a URL.
  if (/^(pages|ui)\//.test(name.replaceAll("\\", "/"))) {
    t.notMatch(text, /\bfetch\(|from "openapi-fetch"|new EventSource\(/, `${name}: no raw requests in components`);
  }
}
