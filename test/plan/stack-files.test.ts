import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "chai";
import { PlanInputError, readStackFiles, SECRET_PLACEHOLDER } from "../../plan/stack-files";

describe("plan stack-file reader", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "stackfiles-"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: demo\nruntime: nodejs\nmain: src/index.ts\n");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("qualifies keys, JSON-encodes structured values and replaces secure values by a placeholder secret", () => {
    fs.writeFileSync(
      path.join(dir, "Pulumi.s1.yaml"),
      "config:\n  aws:region: eu-west-1\n  size: 3\n  demo:net:\n    cidr: 10.0.0.0/16\n  demo:token:\n    secure: AAABAxyz\n",
    );
    const files = readStackFiles(dir, "s1");
    expect(files.project).to.equal("demo");
    expect(files.main).to.equal("src/index.ts");
    expect(files.config).to.deep.equal({
      "aws:region": "eu-west-1",
      "demo:size": "3",
      "demo:net": JSON.stringify({ cidr: "10.0.0.0/16" }),
      "demo:token": SECRET_PLACEHOLDER,
    });
    expect(files.secretKeys).to.deep.equal(["demo:token"]);
  });

  it("names the missing stack file and the stacks that exist", () => {
    fs.writeFileSync(path.join(dir, "Pulumi.dev.yaml"), "config: {}\n");
    expect(() => readStackFiles(dir, "nope")).to.throw(PlanInputError, /Pulumi\.nope\.yaml does not exist \(stacks: dev\)/);
  });

  it("reports malformed YAML with the file name", () => {
    fs.writeFileSync(path.join(dir, "Pulumi.bad.yaml"), "config:\n  a: [unclosed\n");
    expect(() => readStackFiles(dir, "bad")).to.throw(PlanInputError, /Pulumi\.bad\.yaml/);
  });
});
