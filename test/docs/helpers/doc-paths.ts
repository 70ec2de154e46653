/**
 * The repository paths a markdown text names, and which of them the repository does not hold:
 * the mechanics of test/docs/paths.test.ts, whose header says what counts as a path and why.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "../../../scripts/docs-generate";

/** What the checker knows of the repository: the paths git holds, files and folders. */
export interface Repository {
  /** Files, repo-relative with `/`. */
  files: readonly string[];
  /** Every folder holding a file, repo-relative, without a trailing `/`. */
  folders: ReadonlySet<string>;
  /** The number of lines of a file (for `path:line`). */
  lines(file: string): number;
}

/** A word of a doc that may name a path. */
export interface PathWord {
  line: number;
  word: string;
  fenced: boolean;
  /** Whether the word is in the first cell of a table row. */
  firstCell: boolean;
  /** On a table row, the words of its first cell before this one (a file map's first cell is the path). */
  before?: readonly string[];
}

/** A path a doc names that the repository does not hold. */
export interface Missing {
  doc: string;
  line: number;
  path: string;
  why: string;
}

/** Where a word points: a repo-relative path (possibly a pattern), or the end of any path. */
export type Target = { kind: "path"; path: string } | { kind: "ending"; path: string };

/** The repository as git holds it, including files not committed yet (but not ignored ones). */
export function gitRepository(root = REPO_ROOT): Repository {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((f) => f !== "" && fs.existsSync(path.join(root, f)));
  return repository(files, (f) => fs.readFileSync(path.join(root, f), "utf8").split("\n").length);
}

/** A Repository over a list of files. Pure but for `lines`. */
export function repository(files: readonly string[], lines: (file: string) => number): Repository {
  const folders = new Set<string>();
  for (const f of files) for (let d = path.posix.dirname(f); d !== "."; d = path.posix.dirname(d)) folders.add(d);
  return { files, folders, lines };
}

/** The words of a text, with HTML entities and mermaid's `<br/>` undone and a `<placeholder>` kept whole. Pure. */
function words(text: string): Array<{ word: string; at: number }> {
  const cleaned = text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/<br\s*\/?>/g, " ")
    // A placeholder is one segment, even when it is written with spaces (`<instance id>`).
    .replace(/<[^<>/]*>/g, (p) => p.replace(/\s/g, "_"));
  // Quotes, brackets, `=`, `|`, `,` and `;` end a word (`--x=path`, `"path"`, `[label]`), except
  // that a `{a,b}` stays whole for expandBraces; a trailing `.` or `:` is the sentence's.
  return [...cleaned.matchAll(/(?:[^\s"'`()[\]=|,;{}]|\{[^{}\s]*\})+/g)]
    .map((m) => ({ word: m[0].replace(/[.:]+$/, ""), at: m.index }))
    .filter((w) => w.word !== "");
}

/** The words of a markdown text that may be paths: each code span's and each fenced block's. Pure. */
export function pathWords(markdown: string): PathWord[] {
  const out: PathWord[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, i) => {
    const opener = /^\s*(```+|~~~+)/.exec(text)?.[1];
    if (opener && (fence === undefined || opener.startsWith(fence))) {
      fence = fence === undefined ? opener : undefined;
      return;
    }
    if (fence !== undefined) {
      for (const w of words(text)) out.push({ line: i + 1, word: w.word, fenced: true, firstCell: false });
      return;
    }
    const row = text.startsWith("|");
    const firstCellEnd = row ? text.indexOf(" | ", 1) : -1;
    const before: string[] = [];
    for (const span of text.matchAll(/(`+)(.+?)\1/g)) {
      const firstCell = row && span.index < firstCellEnd;
      for (const w of words(span[2]!)) {
        out.push({ line: i + 1, word: w.word, fenced: false, firstCell, ...(row ? { before: [...before] } : {}) });
        if (firstCell) before.push(w.word);
      }
    }
  });
  return out;
}

/** The regular expression of one path pattern (braces already expanded), whole-path. Pure. */
export function patternRegExp(pattern: string): RegExp {
  const body = pattern
    .split(/(\*\*\/|\*\*|\*|<[^<>/]*>|…|\$\{?[A-Za-z_]\w*\}?)/)
    .map((p) => {
      if (p === "**/") return "(?:[^/]+/)*";
      if (p === "**") return ".*";
      if (p === "*" || p === "…" || /^(?:<.*>|\$.+)$/.test(p)) return "[^/]*";
      return p.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("");
  return new RegExp(`^${body}$`);
}

/** A pattern with each `{a,b}` expanded. Pure. */
export function expandBraces(pattern: string): string[] {
  const m = /\{([^{}]*)\}/.exec(pattern);
  if (!m) return [pattern];
  return m[1]!.split(",").flatMap((alt) => expandBraces(pattern.slice(0, m.index) + alt + pattern.slice(m.index + m[0].length)));
}

const MODULE_EXTENSIONS = [".ts", ".mjs", ".cjs", ".js"];
const isPattern = (p: string) => /[*<…$]/.test(p);
const withoutSuffix = (word: string) => word.replace(/:\d+(?:-\d+)?$/, "").replace(/#.*$/, "");
const under = (word: string, entry: string) =>
  word === entry || word === entry.replace(/\/$/, "") || word.startsWith(entry.endsWith("/") ? entry : `${entry}/`);

/** Paths a doc names on purpose that the repository does not hold, each with the reason. */
export interface Exceptions {
  /** Paths git does not hold (run-time output, other repositories' files): a word is skipped when it is one or lies under one. */
  notHere: ReadonlyArray<{ path: string; why: string }>;
  /** Docs whose tables' first cell names gone paths on purpose. */
  historical: ReadonlyArray<{ doc: string; why: string }>;
}

/** Whether a word names one of the paths `notHere` lists (the entry or under it). Pure. */
export function listed(word: string, notHere: Exceptions["notHere"]): boolean {
  return notHere.some((e) => under(word, e.path));
}

/** Where a word points, or undefined when it is not a path of ours (see the header). Pure. */
export function target(w: PathWord, doc: string, repo: Repository, notHere: Exceptions["notHere"] = []): Target | undefined {
  const word = w.word;
  const [first, ...rest] = word.split("/");
  // A first segment that is all placeholder (`<org>/…`, `$URI/…`) could be anything: it does not make a path ours.
  const allPlaceholder = /^(?:<[^<>]*>|\*+|…|\$\{?\w+\}?)$/.test(first!);
  const matchesOne = (names: Iterable<string>) => !allPlaceholder && [...names].some((n) => patternRegExp(first!).test(n));
  const top = new Set(repo.files.map((f) => f.split("/")[0]!));
  const relative = word.startsWith("./") || word.startsWith("../");
  // 1. rooted
  if (rest.length > 0 && first !== "" && !relative && matchesOne([...top].filter((t) => repo.folders.has(t)))) return { kind: "path", path: word };
  if (rest.length === 0 && /\.[A-Za-z]+$/.test(word) && matchesOne([...top].filter((t) => !repo.folders.has(t)))) return { kind: "path", path: word };
  if (w.fenced) return undefined;
  // 2. beside the doc
  const dir = path.posix.dirname(doc);
  const beside = [...repo.folders].filter((f) => path.posix.dirname(f) === dir).map((f) => path.posix.basename(f));
  if (relative || (rest.length > 0 && matchesOne(beside))) return { kind: "path", path: path.posix.normalize(path.posix.join(dir, word)) };
  // 3 and 4: a name with an extension git holds, not absolute, not a name ending (`.config.ts`)
  const extensions = new Set(repo.files.map((f) => /\.([A-Za-z0-9]+)$/.exec(f)?.[1]));
  const extension = /\.([A-Za-z0-9]+)$/.exec(withoutSuffix(word))?.[1];
  if (extension === undefined || !extensions.has(extension) || word.startsWith("/") || (rest.length === 0 && word.startsWith("."))) return undefined;
  // 3. in a file map: the first path of the row's first cell (not a pattern) is the folder its bare names are in.
  for (const earlier of w.before ?? []) {
    const row = listed(earlier, notHere) ? undefined : target({ line: w.line, word: earlier, fenced: false, firstCell: false }, doc, repo, notHere);
    if (row?.kind !== "path" || isPattern(row.path)) continue;
    const rowPath = withoutSuffix(row.path);
    const folder = rowPath.endsWith("/") || !/\.[^/]+$/.test(rowPath) ? rowPath.replace(/\/$/, "") : path.posix.dirname(rowPath);
    return { kind: "path", path: `${folder}/${word}` };
  }
  // 4. elsewhere
  return { kind: "ending", path: word };
}

/** Why a target does not exist, or undefined when it does. Pure but for `repo.lines`. */
export function problem(t: Target, repo: Repository): string | undefined {
  const lineRef = /:(\d+)(?:-(\d+))?$/.exec(t.path);
  const bare = withoutSuffix(t.path);
  const folder = bare.endsWith("/");
  const stem = bare.replace(/\/$/, "");
  const candidates = folder ? [...repo.folders] : [...repo.files, ...repo.folders];
  for (const alt of expandBraces(stem)) {
    // A word without an extension may be a module, as imports name it (`policy/testing/evaluate`).
    const forms = /\.[^/]+$/.test(alt) ? [alt] : [alt, ...MODULE_EXTENSIONS.map((e) => `${alt}${e}`)];
    const found = forms.some((f) => {
      if (t.kind === "ending") {
        const re = new RegExp(`(?:^|/)${patternRegExp(f).source.slice(1)}`);
        return candidates.some((c) => re.test(c));
      }
      return isPattern(f) ? candidates.some((c) => patternRegExp(f).test(c)) : candidates.includes(f);
    });
    const which = alt !== stem ? ` (${alt})` : "";
    if (!found && t.kind === "ending") return `no file of the repository is called that${which}`;
    if (!found) return isPattern(alt) ? `matches no ${folder ? "folder" : "path"}${which}` : `no such ${folder ? "folder" : "file or folder"}${which}`;
  }
  if (lineRef && t.kind === "path" && !isPattern(bare)) {
    const last = Number(lineRef[2] ?? lineRef[1]);
    const lines = repo.lines(bare);
    if (last > lines) return `line ${last} is past the end (${lines} lines)`;
  }
  return undefined;
}

/** The paths a doc names that the repository does not hold. Pure but for `repo.lines`. */
export function missingPaths(doc: string, markdown: string, repo: Repository, exceptions: Exceptions): Missing[] {
  const historical = exceptions.historical.some((h) => h.doc === doc);
  const skip = (word: string) => listed(word, exceptions.notHere);
  const out: Missing[] = [];
  for (const w of pathWords(markdown)) {
    if ((historical && w.firstCell) || skip(w.word)) continue;
    // A historical row's first cell is the old place, so no bare name is resolved there.
    const t = target(historical ? { ...w, before: undefined } : w, doc, repo, exceptions.notHere);
    if (t === undefined || skip(t.path)) continue;
    const why = problem(t, repo);
    if (why) out.push({ doc, line: w.line, path: t.path !== w.word ? `${w.word} (${t.path})` : w.word, why });
  }
  return out;
}

/** The missing paths as a failure lists them: one line each with the doc, line, path and why. Pure. */
export function report(missing: readonly Missing[]): string {
  return missing.map((m) => `  ${m.doc}:${m.line}: \`${m.path}\`: ${m.why}`).join("\n");
}
