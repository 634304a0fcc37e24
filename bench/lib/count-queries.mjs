// Preloaded (node --import) into a service by `npm run bench -- fanout`: counts the statements its
// pg clients send, so the bench can print statements per operation without pg_stat_statements.
// On SIGUSR2 the count is written to $ORCH_BENCH_QUERY_COUNT_FILE (synchronously: the bench reads it next).
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const file = process.env.ORCH_BENCH_QUERY_COUNT_FILE;
if (file) {
  // The services resolve pg from the repository root as this file does: the same module instance.
  const pg = createRequire(import.meta.url)("pg");
  let count = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function counted(...args) {
    count++;
    return query.apply(this, args);
  };
  process.on("SIGUSR2", () => writeFileSync(file, String(count)));
}
