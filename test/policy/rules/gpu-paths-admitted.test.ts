/**
 * policy/rules/gpu-paths-admitted.ts: every HTTP path a function takes to the GPU service is open (issue 35).
 *
 * The good recordings are the two capacity modes: platform (instance mode, as dev: the window and
 * DLQ consumers POST to the instance, the idle check GETs its status) and ingest-fleet (fleet mode,
 * as prod: the consumers POST to the load balancer, the scaler GETs each instance's status). The
 * fleet recording carries the fixed shape, the GPUs' group admitting the consumers' group
 * (`ingest-gpu-from-consumers`), which today's prod plan lacks; removing it is the mutation.
 */
import { expect } from "chai";
import type { RecordedResource, Violation } from "../../../policy/testing/types";
import { U } from "../helpers/ingest";
import { F, ingestFleetRecording } from "../helpers/ingest-fleet";
import { X, platformRecording } from "../helpers/platform";
import { editInput, find, remove, setInput } from "../helpers/recording";
import { evaluate, expectNoViolations, expectViolation, type Mode } from "../helpers/violations";

const POLICY = "gpu-paths-admitted";
const MODES: Mode[] = ["update", "first-preview"];
type Rules = Array<Record<string, unknown>>;

/** Assess: `POLICY` fired once on each of `urns` (mandatory), every message matching, and nothing else fired. */
function expectOnEach(violations: Violation[], urns: string[], message: RegExp): void {
  const dump = JSON.stringify(violations, null, 2);
  expect(violations.map((v) => [v.policy, v.urn, v.enforcementLevel]).sort(), dump).to.deep.equal(urns.map((u) => [POLICY, u, "mandatory"]).sort());
  for (const v of violations) expect(v.message, dump).to.match(message);
}

describe(POLICY, () => {
  for (const mode of MODES) {
    it(`passes instance mode (dev's shape): window, DLQ consumer and idle check reach the instance (${mode})`, async () => {
      // Prepare
      const rs = platformRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });

    it(`passes fleet mode (prod's shape, fixed): consumers reach the load balancer, the scaler each instance (${mode})`, async () => {
      // Prepare
      const rs = ingestFleetRecording();
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectNoViolations(violations);
    });

    it(`fails fleet mode when the GPUs' group does not admit the scaler's group (today's prod) (${mode})`, async () => {
      // Prepare: the GPUs admit the service port from the load balancer's group only.
      const rs = ingestFleetRecording();
      remove(rs, F.gpuFromConsumers);
      // Act
      const violations = await evaluate(rs, { mode });
      // Assess
      expectViolation(violations, {
        policy: POLICY,
        level: "mandatory",
        urn: F.scalerFn,
        message:
          /^Function 'ingest-gpu-scaler' GETs the status of each instance of group 'ingest-gpu' \(launch template 'ingest-gpu-lt'\) on port 8080, but no ingress rule of 'ingest-gpu-sg' admits port 8080 from its security group\(s\) 'ingest-consumers-sg'/,
      });
    });
  }

  describe("fails", () => {
    const cases: { title: string; recording: () => RecordedResource[]; urns: string[]; message: RegExp; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "instance mode: the GPU's group admits another port",
        recording: platformRecording,
        urns: [U.windowFn, U.dlqFn, X.idleFn],
        message: /instance 'gpu' on port 8080, but no ingress rule of 'ingest-gpu-sg' admits port 8080/,
        mutate: (rs) => editInput<Rules>(rs, X.gpuSg, "ingress", (i) => Object.assign(i[0]!, { fromPort: 9090, toPort: 9090 })),
      },
      {
        title: "instance mode: the GPU's group admits UDP on the port",
        recording: platformRecording,
        urns: [U.windowFn, U.dlqFn, X.idleFn],
        message: /no ingress rule of 'ingest-gpu-sg' admits port 8080/,
        mutate: (rs) => editInput<Rules>(rs, X.gpuSg, "ingress", (i) => (i[0]!.protocol = "udp")),
      },
      {
        title: "instance mode: the GPU's group admits a CIDR that does not cover the VPC",
        recording: platformRecording,
        urns: [U.windowFn, U.dlqFn, X.idleFn],
        message: /or from a CIDR covering the VPC: every request times out/,
        mutate: (rs) => {
          setInput(rs, X.gpuSg, "ingress", [{ protocol: "tcp", fromPort: 8080, toPort: 8080, cidrBlocks: ["10.40.1.0/24"] }]);
          find(rs, X.gpuSg).propertyDependencies.ingress = [];
        },
      },
      {
        title: "the consumers' group allows no egress on the port",
        recording: platformRecording,
        urns: [U.windowFn, U.dlqFn, X.idleFn],
        message: /its security group\(s\) 'ingest-consumers-sg' allow no egress on port 8080 to 'ingest-gpu-sg' or to a CIDR covering the VPC/,
        mutate: (rs) => editInput<Rules>(rs, X.consumersSg, "egress", (e) => e.splice(1, 1)),
      },
      {
        title: "the consumers' egress on the port goes to a range outside the VPC",
        recording: platformRecording,
        urns: [U.windowFn, U.dlqFn, X.idleFn],
        message: /allow no egress on port 8080/,
        mutate: (rs) => editInput<Rules>(rs, X.consumersSg, "egress", (e) => (e[1]!.cidrBlocks = ["10.99.0.0/16"])),
      },
      {
        title: "a caller outside the VPC (no vpcConfig)",
        recording: platformRecording,
        urns: [X.idleFn],
        message: /^Function 'ingest-gpu-idle' calls the GPU service on port 8080, but its vpcConfig names no SecurityGroup of this stack/,
        mutate: (rs) => {
          setInput(rs, X.idleFn, "vpcConfig", undefined);
          delete find(rs, X.idleFn).propertyDependencies.vpcConfig;
        },
      },
      {
        title: "an idle check whose GPU cannot be found (its parameter names no parameter of the stack)",
        recording: platformRecording,
        urns: [X.idleFn],
        message: /GETs each GPU instance's status \(GPU_STATUS_PATH\), but no Auto Scaling group or GPU instance of this stack is found/,
        mutate: (rs) =>
          editInput<{ variables: Record<string, string> }>(rs, X.idleFn, "environment", (e) => (e.variables.GPU_INSTANCE_ID_PARAM = "/elsewhere")),
      },
      {
        title: "fleet mode: the load balancer's group admits another group",
        recording: ingestFleetRecording,
        urns: [U.windowFn, U.dlqFn],
        message: /POSTs to load balancer 'ingest-gpu-lb' on port 8080, but no ingress rule of 'ingest-gpu-lb-sg' admits port 8080/,
        mutate: (rs) => {
          editInput<Rules>(rs, F.lbSg, "ingress", (i) => (i[0]!.securityGroups = ["sg-0elsewhere"]));
          find(rs, F.lbSg).propertyDependencies.ingress = [];
        },
      },
      {
        title: "fleet mode: a service host not derived from a load balancer of the stack",
        recording: ingestFleetRecording,
        urns: [U.windowFn],
        message: /^Function 'ingest-window' POSTs to the GPU service, but GPU_FLEET_SERVICE_HOST is not derived from a load balancer of this stack/,
        mutate: (rs) => {
          const window = find(rs, U.windowFn);
          window.propertyDependencies.environment = window.propertyDependencies.environment!.filter((u) => u !== F.loadBalancer);
        },
      },
      {
        title: "fleet mode: the scaler admitted on a standalone rule for another port",
        recording: ingestFleetRecording,
        urns: [F.scalerFn],
        message: /no ingress rule of 'ingest-gpu-sg' admits port 8080/,
        mutate: (rs) => {
          setInput(rs, F.gpuFromConsumers, "fromPort", 22);
          setInput(rs, F.gpuFromConsumers, "toPort", 22);
        },
      },
    ];
    for (const mode of MODES) {
      for (const c of cases) {
        it(`${c.title} (${mode})`, async () => {
          // Prepare
          const rs = c.recording();
          c.mutate(rs);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectOnEach(violations, c.urns, c.message);
        });
      }
    }
  });

  describe("passes", () => {
    const cases: { title: string; recording: () => RecordedResource[]; mutate: (rs: RecordedResource[]) => void }[] = [
      {
        title: "instance mode: the GPU's group admits the VPC's range instead of the consumers' group",
        recording: platformRecording,
        mutate: (rs) => {
          setInput(rs, X.gpuSg, "ingress", [{ protocol: "tcp", fromPort: 8080, toPort: 8080, cidrBlocks: ["10.40.0.0/16"] }]);
          find(rs, X.gpuSg).propertyDependencies.ingress = [];
        },
      },
      {
        title: "instance mode: every protocol from the consumers' group",
        recording: platformRecording,
        mutate: (rs) => editInput<Rules>(rs, X.gpuSg, "ingress", (i) => Object.assign(i[0]!, { protocol: "-1", fromPort: 0, toPort: 0 })),
      },
      {
        title: "instance mode: the consumers' egress names the GPU's group rather than the VPC's range",
        recording: platformRecording,
        mutate: (rs) => {
          editInput<Rules>(rs, X.consumersSg, "egress", (e) => (e[1] = { protocol: "tcp", fromPort: 8080, toPort: 8080, securityGroups: ["sg-0gpu"] }));
          find(rs, X.consumersSg).propertyDependencies.egress = [X.gpuSg];
        },
      },
      {
        title: "fleet mode: the scaler admitted in the GPUs' inline ingress, beside the load balancer",
        recording: ingestFleetRecording,
        mutate: (rs) => {
          remove(rs, F.gpuFromConsumers);
          setInput(rs, F.gpuSg, "ingress", [{ protocol: "tcp", fromPort: 8080, toPort: 8080, securityGroups: ["sg-0consumers"] }]);
          find(rs, F.gpuSg).propertyDependencies.ingress = [X.consumersSg];
        },
      },
      {
        title: "a function that does not call the GPU service (no GPU_SERVICE_PORT) is not judged",
        recording: platformRecording,
        mutate: (rs) => {
          editInput<{ variables: Record<string, string> }>(rs, X.idleFn, "environment", (e) => delete e.variables.GPU_SERVICE_PORT);
          setInput(rs, X.idleFn, "vpcConfig", undefined);
          delete find(rs, X.idleFn).propertyDependencies.vpcConfig;
        },
      },
    ];
    for (const mode of MODES) {
      for (const c of cases) {
        it(`${c.title} (${mode})`, async () => {
          // Prepare
          const rs = c.recording();
          c.mutate(rs);
          // Act
          const violations = await evaluate(rs, { mode });
          // Assess
          expectNoViolations(violations);
        });
      }
    }
  });
});
