import { expect } from "chai";
import { parseRetrainingMessage, strategyOf } from "../../../functions/retraining/message";
import { MODEL_NAME_RULE } from "../../../functions/shared/patterns";

describe("retraining/launcher units", () => {
  describe("message", () => {
    it("accepts the seed's body and ignores extra keys", () => {
      expect(parseRetrainingMessage(JSON.stringify({ model_name: "PascalStrategy", trigger: "manual", extra: 1 }))).to.deep.equal({
        ok: true,
        message: { modelName: "PascalStrategy", trigger: "manual" },
      });
    });

    const TASK = "arn:aws:ecs:us-east-1:123456789012:task/platform-cluster/0123456789abcdef0123456789abcdef";
    const JOB = "6f1c7a4e-2b8d-5c0e-9a3f-5d7b1e2c4a68";
    it("takes a task id in either form ECS has used: 32 hex digits, or a UUID with dashes", () => {
      const uuidTask = "arn:aws:ecs:us-east-1:123456789012:task/platform-cluster/4414808d-e15c-4aa9-a9ed-4a69ea3ccf18";
      for (const task_arn of [TASK, uuidTask])
        expect(parseRetrainingMessage(JSON.stringify({ model_name: "M", trigger: "manual", relaunch_of: { task_arn, job_id: JOB } })).ok).to.equal(true);
    });

    it("reads a relaunch request's relaunch_of (the interrupted task and its job id)", () => {
      expect(parseRetrainingMessage(JSON.stringify({ model_name: "M", trigger: "manual", relaunch_of: { task_arn: TASK, job_id: JOB } }))).to.deep.equal({
        ok: true,
        message: { modelName: "M", trigger: "manual", relaunchOf: { taskArn: TASK, jobId: JOB } },
      });
    });

    const badRelaunch: Array<[string, unknown]> = [
      ["a task ARN that is not one", { task_arn: "task-1", job_id: JOB }],
      ["a short-format task ARN (no cluster)", { task_arn: "arn:aws:ecs:us-east-1:123456789012:task/0123456789abcdef0123456789abcdef", job_id: JOB }],
      ["a job id that is no UUID", { task_arn: TASK, job_id: "job-1" }],
      ["an extra key", { task_arn: TASK, job_id: JOB, capacity: "FARGATE_SPOT" }],
      ["a string", TASK],
    ];
    for (const [label, relaunch] of badRelaunch)
      it(`relaunch_of with ${label} is invalid_relaunch`, () => {
        const result = parseRetrainingMessage(JSON.stringify({ model_name: "M", trigger: "manual", relaunch_of: relaunch }));
        expect(result.ok ? "ok" : result.reason).to.equal("invalid_relaunch");
      });

    it("strategy is the model name's segment before the first '-', as written (the seed's text, not its tag example)", () => {
      expect(strategyOf("PascalStrategy")).to.equal("PascalStrategy");
      expect(strategyOf("PascalStrategy-btc-v2")).to.equal("PascalStrategy");
    });

    const notObjects: Array<[string, string]> = [
      ["5", "body is number"],
      ['"PascalStrategy"', "body is string"],
      ["null", "body is object"],
      ["[1]", "body is an array"],
    ];
    for (const [body, detail] of notObjects) {
      it(`a JSON ${body} is not_an_object, saying what it is`, () => {
        expect(parseRetrainingMessage(body)).to.deep.equal({ ok: false, reason: "not_an_object", detail });
      });
    }

    it("the detail names each field that failed and why, separated by '; '", () => {
      const result = parseRetrainingMessage(JSON.stringify({ model_name: "a,b", trigger: "cron" }));

      expect(result.ok).to.equal(false);
      const detail = result.ok ? "" : result.detail;
      expect(detail.split("; ").map((d) => d.split(": ")[0])).to.deep.equal(["model_name", "trigger"]);
      expect(detail).to.include(`model_name: must be ${MODEL_NAME_RULE}`);
    });
  });
});
