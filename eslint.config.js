// Lint rules that catch what types alone do not: floating promises, non-exhaustive switches,
// `any` and non-null assertions.
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "client/dist/",
      "console/dist/",
      "console/vite.config.mjs",
      "node_modules/",
      "data/",
      ".bench-cache/",
      "bench/**/*.mjs",
      "scripts/**/*.mjs",
      "bin/",
      "client/bin/",
      "eslint.config.js",
      ".dependency-cruiser.cjs",
    ],
  },
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-non-null-assertion": "error",
    },
  },
  // Tests read JSON answers whose shape they then assert (typed `any`), and index arrays whose
  // length they have just checked.
  {
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off", "@typescript-eslint/no-non-null-assertion": "off" },
  },
  // The example client is plain JavaScript outside the TypeScript project: linted without types.
  { files: ["examples/**/*.mjs"], ...tseslint.configs.disableTypeChecked },
);
