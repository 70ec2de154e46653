import { expect } from "chai";
import { type ExitTarget, flushAndExit } from "../../../functions/shared/exit";

/** A process stand-in whose streams hold their flush callbacks until the test runs them. */
function fakeProcess() {
  const written: Record<"stdout" | "stderr", string[]> = { stdout: [], stderr: [] };
  const flushes: Record<"stdout" | "stderr", Array<() => void>> = { stdout: [], stderr: [] };
  const exits: number[] = [];
  const stream = (name: "stdout" | "stderr") => ({
    write(chunk: string, done: () => void) {
      written[name].push(chunk);
      flushes[name].push(done);
      return false;
    },
  });
  const target: ExitTarget = { stdout: stream("stdout"), stderr: stream("stderr"), exit: (code) => void exits.push(code) };
  return { target, written, flushes, exits };
}

describe("shared/exit", () => {
  const orders = [
    ["stdout", "stderr"],
    ["stderr", "stdout"],
  ] as const;
  for (const [first, second] of orders) {
    it(`exits with the given code only once both streams have flushed (${first} first)`, () => {
      // Prepare
      const p = fakeProcess();
      // Act
      flushAndExit(3, p.target);
      const beforeFlush = [...p.exits];
      for (const done of p.flushes[first]) done();
      const afterFirst = [...p.exits];
      for (const done of p.flushes[second]) done();
      // Assess
      expect(beforeFlush, "not before any stream flushed").to.deep.equal([]);
      expect(afterFirst, `not when only ${first} flushed`).to.deep.equal([]);
      expect(p.exits).to.deep.equal([3]);
    });
  }

  it("writes nothing of its own: it only waits for what is already queued on stdout and stderr", () => {
    // Prepare
    const p = fakeProcess();
    // Act
    flushAndExit(0, p.target);
    // Assess
    expect(p.written).to.deep.equal({ stdout: [""], stderr: [""] });
    expect(p.flushes.stdout).to.have.length(1);
    expect(p.flushes.stderr).to.have.length(1);
  });
});
