import { expect } from "chai";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "../../infra/bundle";
import { parseStackConfig } from "../../infra/config";
import { stackConfig } from "../infra/helpers/stack-config";

/** The stack's config as the program sees it (unqualified `encache:` keys). */

describe("each stack's policy pack config follows the stack's names", () => {
  for (const stack of ["dev", "prod"]) {
    it(`policy/config.${stack}.json requires TerminateInstances on the managed tag key that ${stack}'s fleet uses`, () => {
      // Prepare
      const config = parseStackConfig(stackConfig(stack));
      const pack = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, "policy", `config.${stack}.json`), "utf8")) as Record<string, { tagKeys?: string[] }>;

      // Act
      const tagKeys = pack["ec2-terminate-tag-condition"]?.tagKeys;

      // Assess
      expect(tagKeys).to.deep.equal([config.fleet.names.managedTagKey]);
    });
  }
});
