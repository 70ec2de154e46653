/**
 * Every relative link in README.md and docs/ resolves: the file or folder exists, and an anchor
 * names a heading of the target as GitHub slugs it. Links to the web are not followed.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { markdownFiles, REPO_ROOT } from "../../scripts/docs-generate";

/** GitHub's anchors for a markdown text's headings (lowercase, punctuation dropped, spaces to dashes, repeats numbered). Pure. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]!
      .replace(/<[^>]+>/g, "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The link targets of a markdown text, outside code blocks and code spans. Pure. */
export function links(markdown: string): string[] {
  const prose = markdown.replace(/^\s*```[\s\S]*?^\s*```/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

describe("links in README.md and docs/ resolve", () => {
  it("anchors are GitHub's slugs of the headings", () => {
    expect([...anchors("# Config (`encache:pool`, infra/parts/pool.config.ts)\n## A b\n## A b\n```\n# not\n```")]).to.deep.equal([
      "config-encachepool-infrapartspoolconfigts",
      "a-b",
      "a-b-1",
    ]);
    expect(links("see [a](x.md#y) and `[b](no.md)`\n```\n[c](no.md)\n```\n![img](i.png)")).to.deep.equal(["x.md#y", "i.png"]);
  });

  for (const file of markdownFiles()) {
    it(file, () => {
      const text = fs.readFileSync(path.join(REPO_ROOT, file), "utf8");
      const broken: string[] = [];
      for (const link of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
        const [target, anchor] = link.split("#") as [string, string | undefined];
        const resolved = target === "" ? path.join(REPO_ROOT, file) : path.resolve(path.dirname(path.join(REPO_ROOT, file)), decodeURIComponent(target));
        if (!fs.existsSync(resolved)) {
          broken.push(`${link}: no such file`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith(".md") && !anchors(fs.readFileSync(resolved, "utf8")).has(anchor))
          broken.push(`${link}: no such heading`);
      }
      expect(broken).to.deep.equal([]);
    });
  }
});
