/**
 * The lists README.md and docs/ hold are generated from the code (scripts/docs-generate.ts): the
 * stack outputs from the program run under mocks, the test tiers from package.json, the workflows
 * from .github/workflows, every stack config key from the schema, its JSDoc and the stack files.
 * Each is regenerated here, in memory, and any difference fails: run `npm run docs`.
 */
import { expect } from "chai";
import {
  configKeys,
  docFor,
  fillRegions,
  firstSentence,
  regenerate,
  regionNames,
  renderTiers,
  schemaDocs,
  tableCells,
  TIER_PLACEHOLDER,
  tierScripts,
} from "../../scripts/docs-generate";

describe("the generated lists in README.md and docs/", function () {
  this.timeout(300_000);

  describe("the generator", () => {
    it("rewrites only the bodies of marked regions, by name", () => {
      const md = "a\n<!-- generated:x -->\nold\n<!-- /generated -->\nb\n<!-- generated:y -->\n<!-- /generated -->\n";
      expect(regionNames(md)).to.deep.equal(["x", "y"]);
      expect(fillRegions(md, (name, body) => `${name}:${body.trim()}`)).to.equal(
        "a\n<!-- generated:x -->\nx:old\n<!-- /generated -->\nb\n<!-- generated:y -->\ny:\n<!-- /generated -->\n",
      );
    });

    it("reads the tiers from test:tiers in order, keeps each row's prose, and marks a new tier for describing", () => {
      const pkg = { scripts: { "test:tiers": "npm run a && npm run b", a: 'mocha "test/a/**/*.test.ts" --ignore test/a/x.ts', b: "tsc -p ." } };
      expect(tierScripts(pkg)).to.deep.equal(["a", "b"]);
      const table = renderTiers(pkg, "| `npm run a` | old | what a checks |");
      expect(table).to.contain("| `npm run a` | `test/a/**/*.test.ts` | what a checks |");
      expect(table).to.contain(`| \`npm run b\` | \`tsc -p .\` | ${TIER_PLACEHOLDER} |`);
      expect(() => tierScripts({ scripts: { "test:tiers": "npm run gone" } })).to.throw("gone");
    });

    it("splits table cells, keeping an escaped bar inside its cell", () => {
      expect(tableCells("| `a` | b \\| c | d |")).to.deep.equal(["`a`", "b \\| c", "d"]);
    });

    it("takes a workflow's first sentence, not a dot inside a name", () => {
      expect(firstSentence("On main: `ci.yml` runs. Then more.")).to.equal("On main: `ci.yml` runs.");
    });

    it("lists every leaf, record and defaulted key of a schema, and finds each key's JSDoc by the longest matching chain", () => {
      const keys = configKeys({
        properties: {
          a: { type: "object", properties: { b: { type: "integer", minimum: 1, maximum: 5, default: 2 } } },
          m: { type: "object", additionalProperties: { type: "object", properties: { size: { type: "integer" } } } },
        },
      });
      expect(keys.map((k) => k.path.join("."))).to.deep.equal(["a.b", "m", "m.<name>.size"]);
      expect(keys[0]).to.deep.include({ type: "integer 1–5", default: 2 });
      const source = [
        "const s = z.object({",
        "  a: z.object({",
        "    /** B of a. */",
        "    b: z.number(),",
        "  }),",
        "  /** Any b. */",
        "  b: z.number(),",
        "  /**",
        "   * Size.",
        "   * @default 1",
        "   */",
        "  size: z.number(),",
        "});",
      ];
      const docs = schemaDocs("x.ts", source.join("\n"));
      expect(docFor(["a", "b"], docs)?.text).to.equal("B of a.");
      expect(docFor(["c", "b"], docs)?.text).to.equal("Any b.");
      expect(docFor(["m", "<name>", "size"], docs)).to.deep.include({ text: "Size.", default: "1" });
    });
  });

  describe("the docs", () => {
    let files: Awaited<ReturnType<typeof regenerate>> = [];
    before(async () => {
      files = await regenerate();
    });

    it("hold the regions: outputs, tiers, workflows, config", () => {
      const names = files.flatMap((f) => regionNames(f.current)).sort();
      expect(names).to.include.members(["config", "outputs", "tiers", "workflows"]);
    });

    it("say what the code says now (run npm run docs)", () => {
      const stale = files.filter((f) => f.current !== f.wanted).map((f) => f.file);
      expect(stale, "generated regions differ from the code: run npm run docs").to.deep.equal([]);
    });

    it("describe every test tier (a new tier's row needs its prose)", () => {
      const undescribed = files.filter((f) => f.wanted.includes(TIER_PLACEHOLDER)).map((f) => f.file);
      expect(undescribed, `a tier reads ${TIER_PLACEHOLDER}: write what it checks in its row`).to.deep.equal([]);
    });
  });
});
