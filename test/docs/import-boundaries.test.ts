/**
 * docs/architecture.md's import rules are a lint (`encache/import-boundaries` in
 * eslint.config.mjs). The rule is shown to fail on a wrong-way import of each kind and to pass the
 * imports the architecture allows; `npm run lint` runs it over the repository.
 */
import * as path from "node:path";
import { expect } from "chai";
import { ESLint } from "eslint";
import { REPO_ROOT } from "../../scripts/docs-generate";

const eslint = new ESLint({ cwd: REPO_ROOT });
const problems = async (file: string, code: string) => {
  const [result] = await eslint.lintText(code, { filePath: path.join(REPO_ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === "encache/import-boundaries" || m.ruleId === "no-restricted-imports").map((m) => m.message);
};

describe("the import rules of docs/architecture.md, as a lint", function () {
  this.timeout(120_000);

  const wrong: Array<[string, string, string]> = [
    ["functions/ingest/planted.ts", 'import { PRODUCT } from "../../policy/contract";\nexport const p = PRODUCT;\n', "policy/contract"],
    ["functions/worker/sub/planted.ts", 'export { x } from "../../../infra/config";\n', "infra/config"],
    ["functions/pool/planted.ts", 'import * as pulumi from "@pulumi/pulumi";\nexport const p = pulumi;\n', "never see Pulumi"],
    ["policy/rules/planted.ts", 'export const load = () => import("../../infra/bundle");\n', "infra/bundle"],
    ["infra/iam/planted.ts", 'export { declare } from "../components/declared-document";\n', "infra/components/declared-document"],
    ["infra/parts/planted.ts", 'export type { StackConfig } from "../config";\n', "infra/config"],
    ["infra/components/planted.ts", 'export { x } from "../../local/platform";\n', "local/platform"],
    ["plan/planted.ts", 'export { x } from "../local/platform";\n', "local/platform"],
  ];
  for (const [file, code, target] of wrong) {
    it(`refuses ${file} importing ${target}`, async () => {
      const found = await problems(file, code);
      expect(found.join("\n")).to.contain(target);
    });
  }

  const right: Array<[string, string]> = [
    ["functions/ingest/planted.ts", 'import { x } from "../shared/env";\nimport { y } from "./gpu";\nexport const z = [x, y];\n'],
    [
      "infra/parts/planted.ts",
      'export { grants } from "../../functions/ingest/iam";\nexport { PRODUCT } from "../../policy/contract";\nexport { ManagedQueue } from "../components/managed-queue";\n',
    ],
    ["policy/rules/planted.ts", 'export { PRODUCT } from "../contract";\n'],
    ["local/planted.ts", 'export { x } from "../plan/mocks";\nexport { y } from "../infra/config";\n'],
  ];
  for (const [file, code] of right) {
    it(`allows what ${file} may import`, async () => {
      expect(await problems(file, code)).to.deep.equal([]);
    });
  }
});
