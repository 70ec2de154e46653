/**
 * Every repository path README.md and docs/ write in backticks exists. links.test.ts holds the
 * links; this holds the paths the prose and the commands name, which drifted while the links
 * stayed green (a file moved, the sentence kept its old path).
 *
 * A "word" is a code span's text split at whitespace, or a word of a fenced code block. A word is
 * checked when it is one of these, and resolved as said:
 *   1. rooted: it starts with a top-level folder and a `/` (`infra/…`, `.github/…`), or it is a
 *      top-level file (`package.json`, `Pulumi.<stack>.yaml`). The top-level names are read from
 *      git, so a new folder is covered without editing this file;
 *   2. beside the doc: it starts with `./` or `../`, or its first folder is one beside the doc
 *      (`parts/ingest.md` in docs/): resolved from the doc's folder, as a link is;
 *   3. in a file map: a bare name or relative path with an extension git holds (`gpu.ts`,
 *      `rules/x.ts`) on a table row whose first cell is a path (`| \`functions/ingest/\` | \`gpu.ts\``):
 *      resolved in that folder (a file's folder, when the cell names a file). Other tables mix
 *      folders in a row (docs/reliability.md's tests), so only the first cell sets one;
 *   4. elsewhere in prose: such a name must end some path git holds (`declared-document.ts` is
 *      fine anywhere it is; `queue-worker-service-image.ts` is nowhere).
 *
 * Matching, against the files git tracks or would track (`git ls-files --cached --others
 * --exclude-standard`, so a new file counts before its commit) and their folders:
 *   - `*` is any part of one segment, `**` any number of segments, and a placeholder (`<part>`,
 *     `<instance id>`, a shell `$role`, `…`) any one segment or part of one: at least one path
 *     must match, since a placeholder stands for "one of these";
 *   - `{a,b}` is expanded and every alternative must exist: braces list concrete paths;
 *   - a trailing `/` names a folder; `path:12` or `path:12-30` must lie within the file;
 *     `path#anchor` is checked as `path` (links.test.ts holds the anchors of links); a word without
 *     an extension may be a module as imports name it (`policy/testing/evaluate`).
 *
 * Fenced code blocks are checked by rule 1 only: their commands run files that must exist, but in a
 * block `./x` is relative to the shell, a relative word is the README's folder map
 * (folder-map.test.ts holds it), and a bare file name is mostly output (`--json > dev.json`).
 *
 * Not checked: a path of another repository that starts with none of our names
 * (`pkg/backend/diy/backend.go`), an absolute path (`/app/worker.js`, in an image), a word that is
 * all placeholder at its start (`<org>/encache/dev`), a name ending (`.config.ts`), and a top-level
 * name that does not exist (`Pulumi.staging.yaml`), which cannot be told from prose. Paths the docs
 * name on purpose but git does not hold are listed, with the reason, in RUN_TIME and ELSEWHERE;
 * docs/renamed.md's "before" column names gone paths by design (HISTORICAL).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import { markdownFiles, REPO_ROOT } from "../../scripts/docs-generate";
import { type Exceptions, gitRepository, missingPaths, pathWords, report, repository } from "./helpers/doc-paths";

/**
 * Paths under the checkout that are made at run time, so git never holds them: each must be
 * ignored by git (checked below, so this list can never hide a tracked path). A word is skipped
 * when it is an entry or lies under one.
 */
export const RUN_TIME: ReadonlyArray<{ path: string; why: string }> = [
  { path: ".local/", why: "the local run's state, logs and outputs, per stack, written by `npm start` and the chaos runs" },
  { path: ".cache/", why: "the plan's bundle cache, written by `npm run plan`" },
  { path: ".tools/", why: "Pulumi and cloud-init, unpacked on first use by scripts/ensure-*.sh" },
  { path: ".venv", why: "moto's Python environment, created on first use by the local run" },
  { path: "dist/", why: "the worker's and the GPU gateway's image build contexts, written by the program when it declares the images" },
  { path: "reports/", why: "Stryker's mutation reports" },
  { path: "node_modules", why: "npm's install" },
  { path: "policy/node_modules/", why: "the pack's own install (`npm ci --prefix policy`)" },
];

/**
 * Names the prose gives of files that are not this repository's, on disk or at all (rule 4 would
 * look for them): files of other repositories and packages, inside an archive the program builds,
 * or the reader's own. A file made at run time under the checkout goes in RUN_TIME, by its path.
 */
export const ELSEWHERE: ReadonlyArray<{ path: string; why: string }> = [
  { path: "../shared/tools/", why: "beside the checkout, not in it: where a machine keeps tool releases (written from the repository's root)" },
  { path: "out.json", why: "the reader's own file: `npm run ops -- --outputs out.json` reads it" },
  { path: "dev.json", why: "the reader's own file: `npm run plan -- --export dev.json` writes it" },
  { path: "index.js", why: "the Lambda archive's entry, inside the archive the program builds" },
  { path: "server.js", why: "a file of the @pulumi/policy package" },
  { path: "src/main.ts", why: "a file of pulumi/actions" },
  { path: "awsx/ecr/image.ts", why: "a file of pulumi/pulumi-awsx" },
  { path: "auth.ts", why: "a file of pulumi/pulumi-awsx" },
];

/** Docs whose tables' first cell names gone paths on purpose: words in that cell are skipped. */
export const HISTORICAL: ReadonlyArray<{ doc: string; why: string }> = [
  { doc: "docs/renamed.md", why: 'its "before" column is where a thing was, which no longer exists by design' },
];

const EXCEPTIONS: Exceptions = { notHere: [...RUN_TIME, ...ELSEWHERE], historical: HISTORICAL };

describe("paths in README.md and docs/ exist", () => {
  describe("the extractor and the checker", () => {
    const files = [
      "infra/index.ts",
      "infra/parts/worker.ts",
      "infra/parts/pool.ts",
      "infra/lib/declared-document.ts",
      "test/docs/paths.test.ts",
      "docs/a.md",
      "docs/parts/b.md",
      "package.json",
      "Pulumi.dev.yaml",
    ];
    const repo = repository(files, () => 40);

    it("reports a planted stale path in prose and in a command, with its doc and line, and passes the live ones", () => {
      // Prepare
      const md = [
        "The worker is `infra/parts/worker.ts`; its image was `infra/components/worker-image.ts`.",
        "",
        "```sh",
        "npx tsx infra/old.ts --stack dev",
        "```",
      ].join("\n");
      // Act
      const missing = missingPaths("docs/a.md", md, repo, EXCEPTIONS);
      // Assess
      expect(missing).to.deep.equal([
        { doc: "docs/a.md", line: 1, path: "infra/components/worker-image.ts", why: "no such file or folder" },
        { doc: "docs/a.md", line: 4, path: "infra/old.ts", why: "no such file or folder" },
      ]);
      expect(report(missing)).to.equal(
        "  docs/a.md:1: `infra/components/worker-image.ts`: no such file or folder\n  docs/a.md:4: `infra/old.ts`: no such file or folder",
      );
    });

    const cases: Array<[string, string, string | undefined]> = [
      ["a folder", "`infra/parts/`", undefined],
      ["a file written as a folder", "`infra/index.ts/`", "no such folder"],
      ["a glob that matches", "`test/**/*.test.ts`", undefined],
      ["a glob that matches nothing", "`test/**/*.spec.ts`", "matches no path"],
      ["a placeholder", "`infra/parts/<part>.ts`", undefined],
      ["a placeholder inside a name", "`Pulumi.<stack>.yaml`", undefined],
      ["a shell variable as a placeholder", "```sh\ncat infra/parts/$part.ts\n```", undefined],
      ["braces, all there", "`infra/parts/{worker,pool}.ts`", undefined],
      ["braces, one gone", "`infra/parts/{worker,gpu}.ts`", "no such file or folder (infra/parts/gpu.ts)"],
      ["a line within the file", "`infra/index.ts:12-30`", undefined],
      ["a line past the end", "`infra/index.ts:41`", "line 41 is past the end (40 lines)"],
      ["an anchor", "`docs/a.md#heading`", undefined],
      ["a module as imports name it", "`infra/parts/worker`", undefined],
      ["a path beside the doc", "`parts/b.md`", undefined],
      ["a path beside the doc, gone", "`parts/c.md`", "no such file or folder"],
      ["a path up from the doc", "`../infra/index.ts`", undefined],
      ["a name in a file map's folder", "| `infra/parts/` | `worker.ts`, `pool.ts` |", undefined],
      ["a name beside a file map's file", "| `infra/parts/worker.ts` | with `pool.ts` |", undefined],
      ["a name in a row whose first cell is not a path", "| the tests | `infra/parts/worker.ts`, `declared-document.ts` |", undefined],
      ["a name not in a file map's folder", "| `infra/parts/` | `index.ts` |", "no such file or folder"],
      ["a bare name that is somewhere", "`declared-document.ts`", undefined],
      ["a bare name that is nowhere", "`worker-image.ts`", "no file of the repository is called that"],
      ["a run-time path", "`.local/<stack>/logs/<instance id>.log`", undefined],
      ["a path of another repository", "`pkg/backend/diy/backend.go` `src/main.ts`", undefined],
      ["a path all placeholder at its start", "`<org>/encache/dev`", undefined],
      ["prose that is not a path", "`AWS/SQS` `encache:pool` `npm run test:docs` `.config.ts`", undefined],
    ];
    for (const [title, md, why] of cases) {
      it(`${title}: ${md.replace(/\n/g, " ")} ${why ? `is reported: ${why}` : "passes"}`, () => {
        // Act
        const missing = missingPaths("docs/a.md", md, repo, EXCEPTIONS);
        // Assess
        expect(missing.map((m) => m.why)).to.deep.equal(why ? [why] : []);
      });
    }

    it("reads a placeholder with a space as one word, and a mermaid label's paths", () => {
      expect(pathWords("`.local/<stack>/gpu-<instance id>.log`").map((w) => w.word)).to.deep.equal([".local/<stack>/gpu-<instance_id>.log"]);
      expect(pathWords("```mermaid\n  P[parts/&lt;part&gt;.ts<br/>infra/index.ts]\n```").map((w) => w.word)).to.deep.equal([
        "P",
        "parts/<part>.ts",
        "infra/index.ts",
      ]);
    });

    it("skips the first cell of a HISTORICAL doc's table rows, and only that cell", () => {
      // Prepare
      const md = "| before | now |\n|---|---|\n| `infra/gone.ts` | `infra/also-gone.ts` |";
      // Act / Assess
      expect(missingPaths("docs/renamed.md", md, repo, EXCEPTIONS).map((m) => m.path)).to.deep.equal(["infra/also-gone.ts"]);
      expect(missingPaths("docs/a.md", md, repo, EXCEPTIONS).map((m) => m.path)).to.deep.equal(["infra/gone.ts", "infra/also-gone.ts"]);
    });
  });

  it("every RUN_TIME path is ignored by git, so the list hides no tracked path", () => {
    // Prepare: git check-ignore prints those of the paths it is given that are ignored, and exits 1 when none is.
    const probes = RUN_TIME.map((e) => e.path);
    // Act
    let ignored: string[];
    try {
      ignored = execFileSync("git", ["check-ignore", "--no-index", ...probes], { cwd: REPO_ROOT, encoding: "utf8" }).split("\n");
    } catch (e) {
      ignored = String((e as { stdout?: unknown }).stdout ?? "").split("\n");
    }
    // Assess
    expect(probes.filter((p) => !ignored.includes(p))).to.deep.equal([]);
  });

  const repo = gitRepository();
  for (const doc of markdownFiles()) {
    it(doc, () => {
      // Act
      const missing = missingPaths(doc, fs.readFileSync(path.join(REPO_ROOT, doc), "utf8"), repo, EXCEPTIONS);
      // Assess
      expect(missing, `paths ${doc} names that do not exist:\n${report(missing)}\n`).to.deep.equal([]);
    });
  }
});
