/**
 * local/ keeps a thin core (issue 40): no file over FILE_LIMIT lines, no function over
 * FUNCTION_LIMIT lines. A long function is split into named steps that read as a recipe; a long
 * file into modules by role. Measured with the TypeScript compiler's syntax tree: function
 * declarations, methods, accessors, constructors, arrow functions and function expressions, each
 * from its first token to its last (its doc comment aside), in every TypeScript and JavaScript file
 * git holds or would hold under local/. Every file counts toward the file limit, whatever its language.
 *
 * One shape is not a function in the rule's sense: a browser script's scope wrapper, an immediately
 * invoked function that is its file's only statement (local/show/report-page.js keeps its names off
 * `window` so). The file limit measures it.
 *
 * ALLOWED lists what may stay over a limit for now, each at its length today (it may shrink, not
 * grow) and with the reason; an entry back within the limits must leave the list.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { expect } from "chai";
import ts from "typescript";
import { REPO_ROOT } from "../../infra/bundle";

export const FILE_LIMIT = 450;
export const FUNCTION_LIMIT = 60;

/** A function and its length: `name` qualified by what encloses it (`LocalPlatform.start`, `account.(anonymous)`). */
export interface FunctionLength {
  name: string;
  /** 1-based line of its first token. */
  line: number;
  lines: number;
}

/** Lines as `wc -l` counts them, plus a last line without its newline. Pure. */
export function lineCount(text: string): number {
  if (text === "") return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

type FunctionNode =
  | ts.FunctionDeclaration
  | ts.MethodDeclaration
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration
  | ts.ArrowFunction
  | ts.FunctionExpression;

function isFunction(node: ts.Node): node is FunctionNode {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ts.isArrowFunction(node) ||
    ts.isFunctionExpression(node)
  );
}

const nameText = (name: ts.Node | undefined, sf: ts.SourceFile): string | undefined => (name === undefined ? undefined : name.getText(sf));

/** A function's own name: declared, or the variable, property or field it is assigned to. */
function ownName(node: FunctionNode, sf: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const declared = nameText(node.name, sf);
  if (declared !== undefined) return declared;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return nameText(parent.name, sf) ?? "(anonymous)";
  return "(anonymous)";
}

/** Names of what encloses a node, outermost first: classes, functions, and variables holding an object (a scenario's `run`). */
function enclosingNames(node: ts.Node, sf: ts.SourceFile): string[] {
  const names: string[] = [];
  for (let at = node.parent; at !== undefined && !ts.isSourceFile(at); at = at.parent) {
    if (isFunction(at)) {
      if (!isScriptScope(at, sf)) names.unshift(ownName(at, sf));
    } else if ((ts.isClassDeclaration(at) || ts.isClassExpression(at)) && at.name) names.unshift(at.name.text);
    else if (ts.isVariableDeclaration(at) && !(at.initializer && isFunction(at.initializer))) names.unshift(at.name.getText(sf));
  }
  return names;
}

/** An immediately invoked function that is the file's only statement: a browser script's scope. */
function isScriptScope(node: FunctionNode, sf: ts.SourceFile): boolean {
  let callee: ts.Node = node;
  while (ts.isParenthesizedExpression(callee.parent)) callee = callee.parent;
  const call = callee.parent;
  if (!ts.isCallExpression(call) || call.expression !== callee) return false;
  const statement = call.parent;
  return ts.isExpressionStatement(statement) && sf.statements.length === 1 && sf.statements[0] === statement;
}

/** Every function of a TypeScript or JavaScript text, with its qualified name and length. Pure. */
export function functionLengths(file: string, text: string): FunctionLength[] {
  const kind = /\.(js|cjs|mjs)$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const out: FunctionLength[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunction(node) && !isScriptScope(node, sf)) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({ name: [...enclosingNames(node, sf), ownName(node, sf)].join("."), line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** What is over a limit: files by line count, functions by length (`file` alone for a file, `file` and `fn` for a function). */
export interface Offender {
  file: string;
  fn?: string;
  lines: number;
}

/** Every offender of a set of files (repo-relative path → text). Pure. */
export function offenders(files: ReadonlyMap<string, string>): Offender[] {
  const out: Offender[] = [];
  for (const [file, text] of files) {
    const lines = lineCount(text);
    if (lines > FILE_LIMIT) out.push({ file, lines });
    if (!/\.(ts|mts|cts|js|mjs|cjs)$/.test(file)) continue;
    for (const f of functionLengths(file, text)) if (f.lines > FUNCTION_LIMIT) out.push({ file, fn: f.name, lines: f.lines });
  }
  return out;
}

/**
 * Over a limit for now, each at its length today, with the reason. Empty since issue 40's last step:
 * a new entry needs a reason a reviewer accepts (a function that must be one piece, say).
 */
export const ALLOWED: ReadonlyArray<Offender & { why: string }> = [];

const key = (o: Pick<Offender, "file" | "fn">) => (o.fn === undefined ? o.file : `${o.file}: ${o.fn}`);

/** The files under local/ that git holds or would hold, with their text. */
function localFiles(): Map<string, string> {
  const listed = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "local"], { cwd: REPO_ROOT, encoding: "utf8" });
  const files = listed.split("\n").filter((f) => f !== "" && fs.existsSync(path.join(REPO_ROOT, f)));
  return new Map(files.map((f) => [f, fs.readFileSync(path.join(REPO_ROOT, f), "utf8")]));
}

describe("local/ keeps a thin core (issue 40)", () => {
  describe("the measure", () => {
    const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join("\n");

    it("counts lines as wc -l does, and a last line without its newline", () => {
      expect([lineCount(""), lineCount("a\n"), lineCount("a\nb"), lineCount("a\nb\n")]).to.deep.equal([0, 1, 2, 2]);
    });

    it("measures every kind of function from its first token to its last, named by what encloses it", () => {
      const text = [
        "/** A doc comment is not counted. */",
        "export function outer() {",
        "  const inner = () => 1;",
        "  [1].map(function () {",
        "    return 2;",
        "  });",
        "}",
        "class Box {",
        "  constructor() {}",
        "  get size() { return 1; }",
        "  open() {",
        "    return (x: number) => x;",
        "  }",
        "}",
        "export const scenario = { async run() { return 1; } };",
      ].join("\n");
      expect(functionLengths("x.ts", text).map((f) => [f.name, f.line, f.lines])).to.deep.equal([
        ["outer", 2, 6],
        ["outer.inner", 3, 1],
        ["outer.(anonymous)", 4, 3],
        ["Box.constructor", 9, 1],
        ["Box.size", 10, 1],
        ["Box.open", 11, 3],
        ["Box.open.(anonymous)", 12, 1],
        ["scenario.run", 15, 1],
      ]);
    });

    it("finds a planted 61-line function, and passes one of 60", () => {
      const files = new Map([
        ["local/planted.ts", `export function planted() {\n${body(61)}\n}\n`],
        ["local/fine.ts", `export const fine = () => {\n${body(60)}\n};\n`],
      ]);
      expect(offenders(files)).to.deep.equal([{ file: "local/planted.ts", fn: "planted", lines: 61 }]);
    });

    it("finds a file over the limit, whatever its language", () => {
      const long = "x = 1\n".repeat(FILE_LIMIT + 1);
      expect(offenders(new Map([["local/aws/planted.py", long]]))).to.deep.equal([{ file: "local/aws/planted.py", lines: FILE_LIMIT + 1 }]);
    });

    it("takes a script's scope wrapper for the file, and still measures the functions in it", () => {
      const script = `(function () {\n  "use strict";\n  function long() {\n${body(61)}\n  }\n${body(62)}\n})();\n`;
      expect(offenders(new Map([["local/show/page.js", script]]))).to.deep.equal([{ file: "local/show/page.js", fn: "long", lines: 61 }]);
      const notAlone = `${script}var after = 1;\n`;
      expect(offenders(new Map([["local/show/page.js", notAlone]])).map((o) => o.fn)).to.deep.equal(["(anonymous)", "(anonymous).long"]);
    });
  });

  describe("local/", () => {
    const found = offenders(localFiles());
    const allowed = new Map(ALLOWED.map((a) => [key(a), a]));

    it(`has no file over ${FILE_LIMIT} lines and no function over ${FUNCTION_LIMIT} lines, but the allowed`, () => {
      const over = found.filter((o) => !allowed.has(key(o))).map((o) => `${key(o)} (${o.lines} lines)`);
      expect(over, "split these (a long function into named steps, a long file into modules by role)").to.deep.equal([]);
    });

    it("lets no allowed offender grow past its length today", () => {
      const grown = found.flatMap((o) => {
        const a = allowed.get(key(o));
        return a !== undefined && o.lines > a.lines ? [`${key(o)}: ${o.lines} lines, allowed ${a.lines}`] : [];
      });
      expect(grown).to.deep.equal([]);
    });

    it("allows nothing that is back within the limits (its entry leaves ALLOWED)", () => {
      const over = new Set(found.map(key));
      expect(ALLOWED.filter((a) => !over.has(key(a))).map(key)).to.deep.equal([]);
    });
  });

  describe("local/'s rooms", () => {
    /** Pure: the pairs of local/ subfolders that import each other, from each file's relative imports. */
    const mutualFolders = (files: ReadonlyMap<string, string>): string[] => {
      const folderOf = (file: string) => (file.split("/").length > 2 ? file.split("/")[1]! : undefined);
      const edges = new Set<string>();
      for (const [file, text] of files) {
        if (!/\.(ts|js|cjs)$/.test(file)) continue;
        for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
          if (!fileName.startsWith(".")) continue;
          const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), fileName));
          const [from, to] = [folderOf(file), target.startsWith("local/") ? folderOf(target) : undefined];
          if (from !== undefined && to !== undefined && from !== to) edges.add(`${from}→${to}`);
        }
      }
      return [...edges].filter((e) => e.split("→")[0]! < e.split("→")[1]! && edges.has(e.split("→").reverse().join("→"))).sort();
    };

    it("finds two folders that import each other", () => {
      const files = new Map([
        ["local/aws/a.ts", `import { b } from "../hosts/b";`],
        ["local/hosts/b.ts", `import { a } from "../aws/a";`],
        ["local/hosts/c.ts", `import { d } from "../provision/d";`],
      ]);
      expect(mutualFolders(files)).to.deep.equal(["aws→hosts"]);
    });

    it("has no subfolder that imports a folder that imports it back, and no more than 7 subfolders", () => {
      const files = localFiles();
      expect(mutualFolders(files)).to.deep.equal([]);
      const rooms = new Set([...files.keys()].filter((f) => f.split("/").length > 2).map((f) => f.split("/")[1]));
      expect(rooms.size).to.be.at.most(7);
    });
  });
});
