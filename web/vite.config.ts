import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The console is served by the gateway from web/dist (services/gateway/src/console/static.ts): hashed
// assets under /assets are immutable, index.html is not cached. No CDN: everything is bundled.
export default defineConfig({
  plugins: [react()],
  // The root node_modules holds React 18 (hoisted for tap); react-query, wouter and react-virtual live
  // there too and would bundle it beside web's React 19. One React, from web/node_modules.
  resolve: { conditions: ["orch-source"], dedupe: ["react", "react-dom", "scheduler"] },
  build: {
    outDir: "dist",
    assetsDir: "assets",
    target: "es2022",
    manifest: true,
    // The CSP forbids inline scripts; the polyfill would be one.
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
  server: { proxy: { "/api": { target: "http://127.0.0.1:8080", changeOrigin: false } } },
});
