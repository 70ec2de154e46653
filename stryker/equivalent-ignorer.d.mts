// Types of equivalent-ignorer.mjs (plain JavaScript so Stryker, which imports plugins without a
// TypeScript loader in its test-runner processes, can load it anywhere).
export interface Entry {
  readonly file: string;
  readonly code: string;
  readonly reason: string;
}
export declare const LISTINGS: string;
export declare function readEntries(dir?: string): Entry[];
export declare function unmatchedEntries(prefix: string, entries?: Entry[]): Entry[];
export interface NodePathLike {
  node: { start?: number | null; end?: number | null };
  hub?: { file?: { opts?: { filename?: string }; code?: string } };
}
export declare function matchEntry(nodePath: NodePathLike, entries: Entry[]): string | undefined;
export declare const strykerPlugins: unknown[];
