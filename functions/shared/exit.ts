/** What flushAndExit needs of the process: its two output streams and its exit. */
export interface ExitTarget {
  stdout: { write(chunk: string, done: (error?: Error | null) => void): unknown };
  stderr: { write(chunk: string, done: (error?: Error | null) => void): unknown };
  exit(code: number): void;
}

/**
 * Exits once stdout and stderr are flushed. Writes to a pipe (the awslogs driver, a shell pipe)
 * are asynchronous in Node, so an immediate `process.exit` can drop the last log lines or cut
 * a large document short. `target` is the process itself but for tests, which cannot let it exit.
 */
export function flushAndExit(code: number, target: ExitTarget = process): void {
  let pending = 2;
  const done = () => {
    if (--pending === 0) target.exit(code);
  };
  // An empty write's callback runs once everything written before it has been handed to the OS.
  target.stdout.write("", done);
  target.stderr.write("", done);
}
