import { expect } from "chai";
import { useStackPlans } from "../helpers/run-plan";
import { ofType as of } from "../helpers/plan-queries";

/** The composition root (infra/index.ts) as a whole; each part has a file of its own beside this. */
describe("the program under Pulumi mocks (offline plan, both stacks)", function () {
  this.timeout(120_000);

  const stacks = useStackPlans();

  for (const stack of ["dev", "prod"]) {
    describe(`stack ${stack}`, () => {
      const doc = () => stacks[stack]!;

      it("prints the --json contract and no mandatory violation", () => {
        const d = doc();
        expect(d).to.have.keys(["project", "stack", "mode", "resources", "violations", "summary"]);
        expect(d.mode).to.equal("update");
        expect(d.project).to.equal("encache");
        expect(d.stack).to.equal(stack);
        expect(d.summary).to.deep.equal({
          resources: d.resources.length,
          mandatory: d.violations.filter((v) => v.enforcementLevel === "mandatory").length,
          advisory: d.violations.filter((v) => v.enforcementLevel === "advisory").length,
        });
        expect(d.summary.mandatory, JSON.stringify(d.violations)).to.equal(0);
        for (const r of d.resources) {
          const keys = ["urn", "type", "name", "parent", "inputs", "dependencies", "protect"];
          expect(r).to.have.keys(r.arn === undefined ? keys : [...keys, "arn"]);
          expect(r.protect).to.be.a("boolean");
          if (r.arn !== undefined) expect(r.arn).to.match(/^arn:aws:[a-z0-9-]+:/);
          expect(r.urn).to.match(new RegExp(`^urn:pulumi:${stack}::encache::`));
        }
      });

      it("spreads the VPC over the zones the stack pins by AZ ID, by this account's names, in that order", () => {
        // The plan's mocks name zone use1-azN us-east-1<Nth letter>; a real account pairs them its own way.
        const want = { dev: ["us-east-1a", "us-east-1b"], prod: ["us-east-1a", "us-east-1b", "us-east-1d"] }[stack];
        const [vpc] = of(doc(), "awsx:ec2:Vpc");
        expect(vpc?.inputs.availabilityZoneNames).to.deep.equal(want);
        expect(vpc?.inputs).to.not.have.property("numberOfAvailabilityZones");
      });

      it("keeps S3 and DynamoDB traffic off the NAT with gateway endpoints that awsx routes in every route table", () => {
        const [vpc] = of(doc(), "awsx:ec2:Vpc");
        expect(vpc?.inputs.vpcEndpointStrategy).to.equal("Auto");
        const specs = vpc?.inputs.vpcEndpointSpecs as Array<Record<string, unknown>>;
        expect(specs.map((s) => [s.serviceName, s.vpcEndpointType])).to.deep.equal([
          ["com.amazonaws.us-east-1.s3", "Gateway"],
          ["com.amazonaws.us-east-1.dynamodb", "Gateway"],
        ]);
        for (const s of specs) expect(s).to.not.have.property("routeTableIds");
      });

      it("has every alarm notify the stack's alert topic, which only this account's CloudWatch may publish to", () => {
        const topic = of(doc(), "aws:sns/topic:Topic").find((t) => t.name === "platform-alerts");
        expect(topic?.arn).to.be.a("string");
        const alarms = of(doc(), "aws:cloudwatch/metricAlarm:MetricAlarm");
        expect(alarms.length).to.be.greaterThan(5);
        for (const a of alarms) expect(a.inputs.alarmActions, a.name).to.include(topic!.arn);
        const policy = JSON.parse(String(of(doc(), "aws:sns/topicPolicy:TopicPolicy")[0]!.inputs.policy)) as { Statement: Array<Record<string, unknown>> };
        expect(policy.Statement[0]).to.deep.include({
          Principal: { Service: "cloudwatch.amazonaws.com" },
          Condition: { StringEquals: { "aws:SourceAccount": "123456789012" } },
        });
        const subscriptions = of(doc(), "aws:sns/topicSubscription:TopicSubscription").map((s) => `${String(s.inputs.protocol)}:${String(s.inputs.endpoint)}`);
        expect(subscriptions).to.deep.equal(stack === "prod" ? ["email:platform-oncall@example.com"] : []);
      });

      it("declares the five parts in order, 1 to 5, each a component of its own", () => {
        const parts = doc().resources.filter((r) => r.type.startsWith("encache:parts:"));
        expect(parts.map((r) => r.type)).to.deep.equal([
          "encache:parts:Ingest",
          "encache:parts:Retraining",
          "encache:parts:Fleet",
          "encache:parts:Worker",
          "encache:parts:Pool",
        ]);
        expect(parts.map((r) => r.parent)).to.deep.equal(parts.map(() => null));
      });

      it("gives every source queue a redrive policy to its DLQ with maxReceiveCount 3, and SSE everywhere", () => {
        const queues = of(doc(), "aws:sqs/queue:Queue");
        const sources = queues.filter((q) => (q.inputs.tags as Record<string, string>)["encache:queue-role"] === "source");
        expect(sources.map((q) => q.name)).to.include("ingest");
        for (const q of queues) {
          const role = (q.inputs.tags as Record<string, string>)["encache:queue-role"];
          expect(q.inputs.sqsManagedSseEnabled, `${q.name} SSE`).to.equal(true);
          if (role !== "source") continue;
          const redrive = JSON.parse(String(q.inputs.redrivePolicy)) as { deadLetterTargetArn: string; maxReceiveCount: number };
          expect(redrive.maxReceiveCount).to.equal(3);
          // The literal twin the policy pack reads on a first preview, when the redrive JSON is unknown.
          expect((q.inputs.tags as Record<string, string>)["encache:max-receive-count"]).to.equal("3");
          const dlq = queues.find((d) => q.dependencies.includes(d.urn));
          expect(dlq?.name).to.equal(`${q.name}-dlq`);
          expect(dlq!.inputs.messageRetentionSeconds).to.equal(1_209_600);
          expect(Number(q.inputs.messageRetentionSeconds)).to.be.below(1_209_600);
        }
      });
    });
  }

  it("protects prod's stateful resources from Pulumi itself, and nothing in dev", () => {
    // Prepare: what must survive a --replace, a subnet change or a destroy in prod. The GPU tier is
    // the single instance, or in fleet mode (prod's) the group and the load balancer the consumers
    // POST to; the single instance's protection is held by the GpuInstance case in components.test.ts.
    const stateful = (r: { type: string; name: string }) =>
      r.type === "aws:ec2/instance:Instance" ||
      r.type === "aws:autoscaling/group:Group" ||
      r.type === "aws:lb/loadBalancer:LoadBalancer" ||
      r.type === "aws:dynamodb/table:Table" ||
      r.type === "aws:ecr/repository:Repository" ||
      (r.type === "aws:sqs/queue:Queue" && /(-dlq|-quarantine)$/.test(r.name));

    // Act
    const prodProtected = stacks
      .prod!.resources.filter((r) => r.protect)
      .map((r) => `${r.type} ${r.name}`)
      .sort();
    const prodStateful = stacks
      .prod!.resources.filter(stateful)
      .map((r) => `${r.type} ${r.name}`)
      .sort();

    // Assess
    expect(prodProtected).to.deep.equal(prodStateful);
    expect(prodProtected).to.include.members([
      "aws:autoscaling/group:Group ingest-gpu-fleet",
      "aws:lb/loadBalancer:LoadBalancer ingest-gpu-fleet-lb",
      "aws:dynamodb/table:Table fleet-jobs",
      "aws:ecr/repository:Repository worker-images",
      "aws:sqs/queue:Queue ingest-dlq",
      "aws:sqs/queue:Queue ingest-quarantine",
    ]);
    expect(stacks.dev!.resources.filter((r) => r.protect)).to.deep.equal([]);
  });
});
