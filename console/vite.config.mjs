// The console's build (`npm run build` runs it): static files in console/dist, served by
// cribline at /console/. No inline script or style, so the pages' CSP can forbid them.
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});
