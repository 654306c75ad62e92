/**
 * How src/ imports flow (docs/architecture.md): routes -> services -> repositories -> storage,
 * platform/ beneath every feature, and no import circle, type-only imports included.
 * `npm run check` runs it: `depcruise src`.
 */
const ENTRY = "^src/(app|runtime|server|workers)\\.ts$|^src/cli/";
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import circle, type-only imports included: one of its modules belongs lower down.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "platform-imports-no-feature",
      comment: "platform/ holds the pieces every feature shares, and knows none of them.",
      severity: "error",
      from: { path: "^src/platform/" },
      to: { path: "^src/", pathNot: "^src/platform/" },
    },
    {
      name: "storage-imports-no-feature",
      comment: "storage/ is the bottom layer: it knows platform/ and itself only.",
      severity: "error",
      from: { path: "^src/storage/" },
      to: { path: "^src/", pathNot: "^src/(storage|platform)/" },
    },
    {
      name: "collections-import-no-feature",
      comment: "The collections are declarations that the features read, not the other way round.",
      severity: "error",
      from: { path: "^src/collections/" },
      to: { path: "^src/", pathNot: "^src/(collections|storage|platform)/" },
    },
    {
      name: "repositories-import-down",
      comment: "A repository holds SQL: it may use another repository, never a service, route or hook.",
      severity: "error",
      from: { path: "\\.repository\\.ts$" },
      to: { path: "\\.(service|routes|hooks)\\.ts$" },
    },
    {
      name: "services-import-down",
      comment: "A service never reaches up into the HTTP layer (routes and hooks).",
      severity: "error",
      from: { path: "\\.service\\.ts$" },
      to: { path: "\\.(routes|hooks)\\.ts$" },
    },
    {
      name: "entry-points-on-top",
      comment: "app, runtime, server, workers and the command line assemble the rest; nothing else imports them.",
      severity: "error",
      from: { path: "^src/", pathNot: ENTRY },
      to: { path: ENTRY },
    },
    {
      name: "webhooks-shared-pieces-stay-shared",
      comment: "webhooks/*.ts serve its admin/, delivery/ and retention/ folders, and import none of them.",
      severity: "error",
      from: { path: "^src/webhooks/[^/]+\\.ts$" },
      to: { path: "^src/webhooks/(admin|delivery|retention)/" },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
  },
};
