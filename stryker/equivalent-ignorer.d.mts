// Types of equivalent-ignorer.mjs (plain JavaScript so Stryker, which imports plugins without a
// TypeScript loader in its test-runner processes, can load it anywhere).
export interface Entry {
  readonly file: string;
  readonly code: string;
  readonly reason: string;
  /** How many places in the file the code is, all reviewed as equivalent; 1 when absent. */
  readonly places?: number;
}
export declare const LISTINGS: string;
export declare function readEntries(dir?: string): Entry[];
export declare function misplacedEntries(prefix: string, entries?: Entry[]): Array<{ entry: Entry; found: number; expected: number }>;
export interface NodePathLike {
  node: { start?: number | null; end?: number | null };
  hub?: { file?: { opts?: { filename?: string }; code?: string } };
}
export declare function matchEntry(nodePath: NodePathLike, entries: Entry[]): string | undefined;
export declare const strykerPlugins: unknown[];
