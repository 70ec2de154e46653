// @ts-check
/**
 * A Stryker ignorer plugin ("equivalent-mutants") that reads stryker/equivalent-mutants/<part>.json:
 * the mutants that no test should kill, each with its reason. An entry names a file and the exact
 * source text (whitespace-insensitive) of one expression or statement in it; every mutant Stryker
 * would place in that code, its sub-expressions included, is ignored with the entry's reason as
 * the ignore message (shown in the HTML report) and is not counted in the score. So an entry names
 * the smallest code whose every mutant is equivalent or harmless.
 *
 * Entries match on code, not line numbers, so they survive edits elsewhere in the file. Each entry
 * says how many places in its file it matches (`places`, default 1): an entry that matches nothing
 * is stale, and one that matches more places than it says would silently ignore new code (a second
 * `[]` added to the file). scripts/mutate.ts fails the run on either and names the entry
 * (`misplacedEntries`).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { declareValuePlugin, PluginKind } from "@stryker-mutator/api/plugin";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const LISTINGS = path.join(ROOT, "stryker/equivalent-mutants");

/** @typedef {{ file: string; code: string; reason: string; places?: number }} Entry */

/** Every listing's entries, in file order. @returns {Entry[]} */
export function readEntries(dir = LISTINGS) {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  return files.flatMap((name) => {
    const file = path.join(dir, name);
    const parsed = JSON.parse(fs.readFileSync(file, "utf8"));
    if (!Array.isArray(parsed.equivalents)) throw new Error(`${file}: "equivalents" must be an array`);
    return parsed.equivalents.map((/** @type {Record<string, unknown>} */ e, /** @type {number} */ i) => {
      for (const key of ["file", "code", "reason"]) {
        if (typeof e[key] !== "string" || e[key].trim() === "") {
          throw new Error(`${file}: equivalents[${i}].${key} must be a non-empty string`);
        }
      }
      if (e.places !== undefined && !(Number.isInteger(e.places) && Number(e.places) >= 1)) {
        throw new Error(`${file}: equivalents[${i}].places must be a whole number of at least 1`);
      }
      return /** @type {Entry} */ (e);
    });
  });
}

const squash = (/** @type {string} */ code) => code.replace(/\s+/g, " ").trim();
const relative = (/** @type {string} */ file) => path.relative(ROOT, path.resolve(ROOT, file)).split(path.sep).join("/");

/** How many places each entry matched during this process's instrumentation, by file and squashed code. */
const matched = new Map();
const keyOf = (/** @type {Entry} */ e) => `${e.file}\0${squash(e.code)}`;

/**
 * The entries for files under `prefix` (the code mutated) that did not match exactly the number of
 * places they say: stale ones (found 0) and ones that would now ignore more code than was reviewed.
 * @returns {Array<{ entry: Entry; found: number; expected: number }>}
 */
export function misplacedEntries(/** @type {string} */ prefix, entries = readEntries()) {
  return entries
    .filter((e) => e.file.startsWith(prefix))
    .map((entry) => ({ entry, found: matched.get(keyOf(entry)) ?? 0, expected: entry.places ?? 1 }))
    .filter(({ found, expected }) => found !== expected);
}

/**
 * @param {{ node: { start?: number | null; end?: number | null }; hub?: { file?: { opts?: { filename?: string }; code?: string } } }} nodePath
 *   a Babel NodePath (typed loosely: @babel/traverse is Stryker's, not ours)
 * @param {Entry[]} entries
 */
export function matchEntry(nodePath, entries) {
  const file = nodePath.hub?.file;
  const filename = file?.opts?.filename;
  const code = file?.code;
  const { start, end } = nodePath.node;
  if (!filename || code === undefined || start == null || end == null) return undefined;
  const rel = relative(filename);
  const listed = entries.filter((e) => e.file === rel);
  if (listed.length === 0) return undefined;
  const source = squash(code.slice(start, end));
  const entry = listed.find((e) => squash(e.code) === source);
  if (entry === undefined) return undefined;
  matched.set(keyOf(entry), (matched.get(keyOf(entry)) ?? 0) + 1);
  return `Equivalent (stryker/equivalent-mutants/): ${entry.reason}`;
}

let cached;
export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, "equivalent-mutants", {
    shouldIgnore(/** @type {any} */ nodePath) {
      cached ??= readEntries();
      return matchEntry(nodePath, cached);
    },
  }),
];
