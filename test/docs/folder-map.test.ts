/**
 * README.md's folder map ("Where things are") is held to the filesystem: every folder it names
 * exists where it says, and every top-level folder of the repository is in it.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { REPO_ROOT } from "../../scripts/docs-generate";

/** The folders a map names: `name/` at the start of a line, nested under the last top-level one by indentation. Pure. */
export function mappedFolders(map: string): string[] {
  const folders: string[] = [];
  let top = "";
  for (const line of map.split("\n")) {
    const m = /^( *)([A-Za-z0-9._-]+)\/(\s|$)/.exec(line);
    if (!m) continue;
    if (m[1]!.length === 0) {
      top = m[2]!;
      folders.push(top);
    } else if (top) folders.push(`${top}/${m[2]}`);
  }
  return folders;
}

/** The README's folder map: the first code block after the "Where things are" heading. */
function folderMap(): string {
  const readme = fs.readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
  const m = /^## Where things are\n[\s\S]*?^```\n([\s\S]*?)^```/m.exec(readme);
  expect(m, 'README.md has no folder map under "## Where things are"').to.not.equal(null);
  return m![1]!;
}

describe("README.md's folder map", () => {
  it("reads top-level folders and the subfolders under them", () => {
    expect(mappedFolders("a/   x\n  b/  y\n      continued text/\nc/\n  file.ts\n")).to.deep.equal(["a", "a/b", "c"]);
  });

  it("names only folders that exist", () => {
    const missing = mappedFolders(folderMap()).filter((f) => !fs.statSync(path.join(REPO_ROOT, f), { throwIfNoEntry: false })?.isDirectory());
    expect(missing, "folders in the map that do not exist").to.deep.equal([]);
  });

  it("names every top-level folder of the repository (hidden ones aside)", () => {
    const tracked = execFileSync("git", ["ls-files"], { cwd: REPO_ROOT, encoding: "utf8" }).split("\n");
    const top = [...new Set(tracked.filter((f) => f.includes("/")).map((f) => f.split("/")[0]!))].filter((f) => !f.startsWith(".")).sort();
    const mapped = new Set(mappedFolders(folderMap()));
    expect(
      top.filter((f) => !mapped.has(f)),
      "top-level folders missing from the map",
    ).to.deep.equal([]);
  });
});
