/**
 * Every function's env codec (functions/<part>/env.ts): the program builds the environment with it
 * and the function parses it with it, so what one writes the other reads back.
 */
import { expect } from "chai";
import { byteOrder, EnvConfigError } from "../../functions/shared/env";
import { WORKER_ENV } from "../../functions/worker/env";
import { ENV_SAMPLES as cases } from "./helpers/env-samples";

describe("the functions' env codecs (functions/<part>/env.ts)", () => {
  for (const { name, codec, values } of cases) {
    describe(name, () => {
      it("round-trips: what the program writes, the function reads back", () => {
        // Act
        const parsed = codec.parse(codec.encode(values as never));

        // Assess
        expect(parsed).to.deep.equal(values);
      });

      it("covers every required field in the sample, and the codec's samples together cover every field", () => {
        // An optional field (fleet mode's) may be absent from one sample; some sample of the codec sets it.
        const required = Object.entries(codec.fields).flatMap(([field, f]) => (f.optional ? [] : [field]));
        const covered = new Set(cases.filter((c) => c.codec === codec).flatMap((c) => Object.keys(c.values)));
        expect(Object.keys(values).filter((k) => required.includes(k) || !(k in codec.fields))).to.have.members(required);
        expect([...covered].sort()).to.deep.equal(Object.keys(codec.fields).sort());
      });

      it("emits the environment in byte order of the names", () => {
        // Act
        const names = Object.keys(codec.encode(values as never));

        // Assess
        expect(names).to.deep.equal([...names].sort(byteOrder));
      });

      for (const [field, { name: variable, optional }] of Object.entries(codec.fields)) {
        if (optional) continue;
        it(`names ${variable} when it is missing`, () => {
          // Prepare
          const env = codec.encode(values as never);
          delete env[variable];

          // Act & Assess
          expect(() => codec.parse(env), field).to.throw(EnvConfigError, `${variable} is required but not set`);
        });
      }
    });
  }

  it("pins the worker container's order: the order the AWS provider stores it in", () => {
    // Act
    const names = Object.keys(WORKER_ENV.encode(cases.find((c) => c.name === "worker")!.values as never));

    // Assess
    expect(names).to.deep.equal([
      "QUARANTINE_QUEUE_URL",
      "TASK_PROTECTION_EXPIRES_MINUTES",
      "WORKER_CONCURRENCY",
      "WORKER_DEFAULT_VISIBILITY_SECONDS",
      "WORKER_EXECUTABLES",
      "WORKER_HEARTBEAT_SECONDS",
      "WORKER_IDLE_WINDOW_SECONDS",
      "WORKER_JOBS_TABLE",
      "WORKER_MAX_PROTECTED_SECONDS",
      "WORKER_MAX_VISIBILITY_SECONDS",
      "WORKER_RETRY_DELAY_SECONDS",
      "WORKER_SCRATCH_DIR",
      "WORKER_SHUTDOWN_GRACE_SECONDS",
      "WORKER_WAIT_TIME_SECONDS",
      "WORK_QUEUE_URL",
    ]);
  });
});
