// Lint rules that catch what types alone do not: floating promises and non-exhaustive switches.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "data/", ".bench-cache/", "bench/**/*.mjs", "scripts/**/*.mjs", "bin/", "eslint.config.js"] },
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
  // The example client is plain JavaScript outside the TypeScript project: linted without types.
  { files: ["examples/**/*.mjs"], ...tseslint.configs.disableTypeChecked },
);
