#!/usr/bin/env node
// Launcher committed so npm can link the `orch-agent` bin before the first build.
import("../dist/main.js").catch((err) => {
  if (err && err.code === "ERR_MODULE_NOT_FOUND") {
    process.stderr.write("orch-agent is not built yet: run `npm run build` in the repository\n");
    process.exit(1);
  }
  throw err;
});
