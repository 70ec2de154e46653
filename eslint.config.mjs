// Lint is syntactic (no type information) so it stays fast; `tsc --noEmit` does the type-level checks.
import * as fs from "node:fs";
import * as path from "node:path";
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const ROOT = import.meta.dirname;

/**
 * Who may import whom: the rules of docs/architecture.md ("The code, and who imports whom"), as a
 * lint. `from` and the targets are repo paths; a trailing `/` means the folder and everything in
 * it. A rule either forbids targets or allows only some (`only`); relative imports are resolved
 * against the importing file, so the depth of `../` does not matter.
 */
export const IMPORT_BOUNDARIES = [
  {
    from: "functions/",
    forbid: ["policy/", "infra/", "plan/", "local/", "test/", "scripts/", "stryker/"],
    why: "functions import only functions/ (their own shared/), so a bundle holds nothing of the program or the pack",
  },
  { from: "policy/", only: ["policy/"], why: "the pack imports nothing outside policy/, so it installs and loads on its own" },
  { from: "policy/contract/", only: ["policy/contract/"], why: "policy/contract imports nothing outside itself" },
  {
    from: "infra/",
    forbid: ["local/", "plan/", "test/", "scripts/", "stryker/", "policy/rules/", "policy/lib/", "policy/testing/", "policy/index", "policy/policies"],
    why: "the program imports the functions and policy/contract, never local/ or plan/, so `pulumi up` loads neither",
  },
  { from: "infra/", forbid: ["infra/index"], why: "infra/index.ts is the composition root: nothing inside infra/ imports it" },
  { from: "infra/parts/", forbid: ["infra/config", "infra/index"], why: "infra/ runs one way: index.ts → config.ts → parts/ → components/ → iam/" },
  {
    from: "infra/components/",
    forbid: ["infra/parts/", "infra/config", "infra/index"],
    why: "infra/ runs one way: index.ts → config.ts → parts/ → components/ → iam/",
  },
  {
    from: "infra/iam/",
    forbid: ["infra/components/", "infra/parts/", "infra/config", "infra/index"],
    why: "infra/ runs one way: index.ts → config.ts → parts/ → components/ → iam/",
  },
  {
    from: "plan/",
    forbid: ["local/", "test/", "scripts/", "stryker/"],
    why: "plan/ imports the program and the pack; local/ builds on plan/, not the reverse",
  },
  { from: "local/", forbid: ["test/", "scripts/", "stryker/"], why: "only tests and scripts import test helpers and scripts" },
  {
    from: "ops/",
    forbid: [
      "infra/",
      "local/",
      "plan/",
      "test/",
      "scripts/",
      "stryker/",
      "policy/rules/",
      "policy/lib/",
      "policy/testing/",
      "policy/index",
      "policy/policies",
    ],
    why: "the operator's command reads a stack's outputs, never the program: it runs where the program's dependencies may not load",
  },
];

const noExtension = (p) => p.replace(/\.(ts|mts|js|mjs|cjs)$/, "").replace(/\/index$/, "/index");
const within = (target, entry) => (entry.endsWith("/") ? target.startsWith(entry) : target === entry);

/** The repo path a relative specifier names, without its extension; a folder is its index. */
function resolveSpecifier(filename, specifier) {
  const abs = path.resolve(path.dirname(filename), specifier);
  const isDir = fs.existsSync(abs) && fs.statSync(abs).isDirectory();
  const rel = path
    .relative(ROOT, isDir ? path.join(abs, "index") : abs)
    .split(path.sep)
    .join("/");
  return noExtension(rel);
}

const importBoundaries = {
  meta: {
    type: "problem",
    docs: { description: "the import rules of docs/architecture.md" },
    schema: [],
    messages: { wrongWay: "{{file}} must not import {{target}}: {{why}} (docs/architecture.md)" },
  },
  create(context) {
    const file = path.relative(ROOT, context.filename).split(path.sep).join("/");
    const rules = IMPORT_BOUNDARIES.filter((r) => file.startsWith(r.from));
    if (rules.length === 0) return {};
    const check = (node) => {
      const specifier = node?.type === "Literal" ? node.value : undefined;
      if (typeof specifier !== "string" || !specifier.startsWith(".")) return;
      const target = resolveSpecifier(context.filename, specifier);
      for (const r of rules) {
        const wrong = r.only ? !r.only.some((e) => within(target, e)) : r.forbid.some((e) => within(target, e));
        if (wrong) context.report({ node, messageId: "wrongWay", data: { file, target, why: r.why } });
      }
    };
    return {
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
      TSImportEqualsDeclaration: (n) => check(n.moduleReference?.expression),
    };
  },
};

export default tseslint.config(
  {
    ignores: [
      "node_modules/**",
      "policy/node_modules/**",
      ".venv/**",
      ".venv-cloud-init/**",
      ".tools/**",
      "dist/**",
      ".bench/**",
      ".local/**",
      ".stryker-tmp/**",
      "reports/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { encache: { rules: { "import-boundaries": importBoundaries } } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
      "no-console": "off",
      // One import statement per module: a type import of the same module goes inline (`import { a, type B }`).
      "no-duplicate-imports": "error",
      "encache/import-boundaries": "error",
    },
  },
  {
    // Functions run on AWS and never see Pulumi.
    files: ["functions/**"],
    rules: { "no-restricted-imports": ["error", { patterns: [{ group: ["@pulumi/*"], message: "functions never see Pulumi (docs/architecture.md)" }] }] },
  },
  {
    // CommonJS by design: loaded with `node --require` (stryker/mocha12-cli-paths.cjs).
    files: ["stryker/**/*.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { require: "readonly", module: "writable" } },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
