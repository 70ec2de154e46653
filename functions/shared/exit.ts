/**
 * Exits once stdout and stderr are flushed. Writes to a pipe (the awslogs driver, a shell pipe)
 * are asynchronous in Node, so an immediate `process.exit` can drop the last log lines or cut
 * a large document short.
 */
export function flushAndExit(code: number): void {
  let pending = 2;
  const done = () => {
    if (--pending === 0) process.exit(code);
  };
  process.stdout.write("", done);
  process.stderr.write("", done);
}
