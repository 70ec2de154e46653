/**
 * Scenarios and the chaos run take every setting from the recording (the deployed functions'
 * environments, the recorded resources, the stack outputs), never from the stack file: the
 * recording is what runs, and a second reading of the stack file could disagree with it (issue 40).
 * Only the deploy (local/provision/) reads the stack file, to deploy it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import * as ts from "typescript";
import { REPO_ROOT } from "../../../infra/bundle";

/** The modules that read or parse a stack file. */
const STACK_FILE_READERS = ["plan/stack-files", "infra/config"];

/** Pure: the modules of `readers` a source text imports, by their repo path. */
export function stackFileImports(file: string, text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((i) => i.fileName)
    .filter((s) => s.startsWith("."))
    .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)))
    .filter((target) => STACK_FILE_READERS.includes(target));
}

describe("local scenarios and the chaos run: settings from the recording, not the stack file", () => {
  it("sees an import of the stack file's parser", () => {
    expect(stackFileImports("local/scenarios/x.ts", `import { stackConfigFrom } from "../../infra/config";`)).to.deep.equal(["infra/config"]);
  });

  it("no scenario or chaos module imports a stack-file reader", () => {
    const offenders = ["local/scenarios", "local/chaos"].flatMap((dir) =>
      fs
        .readdirSync(path.join(REPO_ROOT, dir))
        .filter((f) => f.endsWith(".ts"))
        .map((f) => `${dir}/${f}`)
        .flatMap((file) => stackFileImports(file, fs.readFileSync(path.join(REPO_ROOT, file), "utf8")).map((m) => `${file} → ${m}`)),
    );
    expect(offenders).to.deep.equal([]);
  });
});
