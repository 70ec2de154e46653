/**
 * The Auto Scaling provisioner's pure readers (local/provision/autoscaling.ts) and the runtime's
 * fleet topology (local/provision/topology-parsers.ts `fleetsFrom`): group → target group (by ARN) →
 * listener → load balancer, on a hand-built recording.
 */
import { expect } from "chai";
import { groupLaunchTemplate, groupTags } from "../../../local/provision/autoscaling";
import { fleetsFrom } from "../../../local/provision/topology-parsers";
import type { RecordedResource } from "../../../policy/testing/types";

describe("local provisioning: Auto Scaling", () => {
  describe("groupLaunchTemplate", () => {
    const cases: Array<{ name: string; inputs: Record<string, unknown>; want: ReturnType<typeof groupLaunchTemplate> }> = [
      {
        name: "the group's own template, by id",
        inputs: { launchTemplate: { id: "lt-1", version: "$Latest" } },
        want: { LaunchTemplateId: "lt-1", Version: "$Latest" },
      },
      {
        name: "the group's own template, by name",
        inputs: { launchTemplate: { name: "gpu", version: "3" } },
        want: { LaunchTemplateName: "gpu", Version: "3" },
      },
      {
        name: "the mixed instances policy's template",
        inputs: { mixedInstancesPolicy: { launchTemplate: { launchTemplateSpecification: { launchTemplateId: "lt-2", version: "$Default" } } } },
        want: { LaunchTemplateId: "lt-2", Version: "$Default" },
      },
      {
        name: "the mixed instances policy's template, by name",
        inputs: { mixedInstancesPolicy: { launchTemplate: { launchTemplateSpecification: { launchTemplateName: "gpu-mixed" } } } },
        want: { LaunchTemplateName: "gpu-mixed" },
      },
      {
        name: "the group's own template wins over the policy's",
        inputs: {
          launchTemplate: { id: "lt-own" },
          mixedInstancesPolicy: { launchTemplate: { launchTemplateSpecification: { launchTemplateId: "lt-policy" } } },
        },
        want: { LaunchTemplateId: "lt-own" },
      },
      { name: "no template at all", inputs: { minSize: 0 }, want: undefined },
      { name: "a policy without a template", inputs: { mixedInstancesPolicy: { instancesDistribution: {} } }, want: undefined },
    ];
    for (const c of cases) {
      it(c.name, () => {
        // Prepare: the table row. Act
        const spec = groupLaunchTemplate(c.inputs);
        // Assess
        expect(spec).to.deep.equal(c.want);
      });
    }
  });

  describe("groupTags", () => {
    it("turns pulumi-aws's tags into Auto Scaling's, on the group, propagating only when asked", () => {
      // Prepare
      const inputs = {
        tags: [
          { key: "Name", value: "encache-gpu", propagateAtLaunch: true },
          { key: "encache:environment", value: "prod", propagateAtLaunch: "true" },
          { key: "encache:scaled-out-at", value: "", propagateAtLaunch: false },
          { key: "no-propagate-flag", value: "x" },
          { value: "a tag without a key is dropped" },
        ],
      };
      // Act
      const tags = groupTags("encache-gpu-fleet-prod", inputs);
      // Assess
      const on = { ResourceId: "encache-gpu-fleet-prod", ResourceType: "auto-scaling-group" };
      expect(tags).to.deep.equal([
        { ...on, Key: "Name", Value: "encache-gpu", PropagateAtLaunch: true },
        { ...on, Key: "encache:environment", Value: "prod", PropagateAtLaunch: true },
        { ...on, Key: "encache:scaled-out-at", Value: "", PropagateAtLaunch: false },
        { ...on, Key: "no-propagate-flag", Value: "x", PropagateAtLaunch: false },
      ]);
    });

    it("gives no tags for a group without any", () => {
      // Prepare, Act
      const tags = groupTags("g", {});
      // Assess
      expect(tags).to.deep.equal([]);
    });
  });

  describe("fleetsFrom", () => {
    const TG_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/gpu/abc";
    const LB_ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/gpu/def";
    const res = (type: string, name: string, inputs: Record<string, unknown>, outputs: Record<string, unknown> = {}): RecordedResource => ({
      urn: `urn:pulumi:prod::encache::${type}::${name}`,
      type,
      name,
      parent: null,
      custom: true,
      inputs,
      outputs: { ...inputs, ...outputs },
      dependencies: [],
      propertyDependencies: {},
    });
    const group = (inputs: Record<string, unknown> = {}) =>
      res(
        "aws:autoscaling/group:Group",
        "gpu-fleet",
        {
          maxSize: 4,
          targetGroupArns: [TG_ARN],
          mixedInstancesPolicy: {
            instancesDistribution: { onDemandBaseCapacity: 1, onDemandPercentageAboveBaseCapacity: 25 },
            launchTemplate: {
              launchTemplateSpecification: { launchTemplateId: "lt-1" },
              overrides: [{ instanceType: "g5.2xlarge" }, { instanceType: "g6.2xlarge" }, {}],
            },
          },
          ...inputs,
        },
        { name: "encache-gpu-fleet-prod" },
      );
    const targetGroup = (inputs: Record<string, unknown> = {}) =>
      res(
        "aws:lb/targetGroup:TargetGroup",
        "gpu-tg",
        {
          port: 8080,
          deregistrationDelay: 90,
          healthCheck: { path: "/status", interval: 10, healthyThreshold: 2, unhealthyThreshold: 3, timeout: 4 },
          ...inputs,
        },
        { arn: TG_ARN },
      );
    const listener = (inputs: Record<string, unknown> = {}) =>
      res("aws:lb/listener:Listener", "gpu-listener", {
        loadBalancerArn: LB_ARN,
        port: 8080,
        defaultActions: [{ type: "forward", targetGroupArn: TG_ARN }],
        ...inputs,
      });
    const hooks = () => [
      res("aws:autoscaling/lifecycleHook:LifecycleHook", "gpu-launch", {
        name: "launch",
        autoscalingGroupName: "encache-gpu-fleet-prod",
        lifecycleTransition: "autoscaling:EC2_INSTANCE_LAUNCHING",
        heartbeatTimeout: 300,
      }),
      res("aws:autoscaling/lifecycleHook:LifecycleHook", "gpu-drain", {
        name: "drain",
        autoscalingGroupName: "encache-gpu-fleet-prod",
        lifecycleTransition: "autoscaling:EC2_INSTANCE_TERMINATING",
        heartbeatTimeout: 90,
      }),
    ];
    const launchTemplate = () =>
      ({
        ...res("aws:ec2/launchTemplate:LaunchTemplate", "gpu-lt", { userData: Buffer.from("#cloud-config\n").toString("base64") }),
        id: "lt-1",
      }) as RecordedResource;
    const loadBalancer = () =>
      res("aws:lb/loadBalancer:LoadBalancer", "gpu-alb", { internal: true }, { arn: LB_ARN, dnsName: "internal-gpu-alb-1.us-east-1.elb.amazonaws.com" });

    it("follows the group to its target group, listener and load balancer, with the policy, hook, user data and health check", () => {
      // Prepare
      const resources = [loadBalancer(), listener(), targetGroup(), group(), ...hooks(), launchTemplate()];
      // Act
      const fleets = fleetsFrom(resources);
      // Assess
      expect(fleets).to.deep.equal([
        {
          urn: "urn:pulumi:prod::encache::aws:autoscaling/group:Group::gpu-fleet",
          logicalName: "gpu-fleet",
          groupName: "encache-gpu-fleet-prod",
          maxSize: 4,
          spot: { onDemandBaseCapacity: 1, onDemandPercentageAboveBaseCapacity: 25, instanceTypes: ["g5.2xlarge", "g6.2xlarge"] },
          warmPoolMinSize: 0,
          drainHookSeconds: 90,
          drainHookName: "drain",
          userData: "#cloud-config\n",
          loadBalancer: {
            dnsName: "internal-gpu-alb-1.us-east-1.elb.amazonaws.com",
            port: 8080,
            healthCheck: { path: "/status", intervalSeconds: 10, healthyThreshold: 2, unhealthyThreshold: 3, timeoutSeconds: 4 },
          },
        },
      ]);
    });

    it("an on-demand group with a warm pool and no hook: no spot, the pool's size, AWS's target-group defaults", () => {
      // Prepare
      const resources = [
        loadBalancer(),
        listener(),
        targetGroup({ deregistrationDelay: undefined, healthCheck: undefined }),
        group({ mixedInstancesPolicy: undefined, warmPool: { minSize: 2 } }),
      ];
      // Act
      const [fleet] = fleetsFrom(resources);
      // Assess
      expect(fleet).to.not.have.property("spot");
      expect(fleet).to.deep.include({ warmPoolMinSize: 2, drainHookSeconds: 0 });
      expect(fleet.loadBalancer).to.deep.equal({
        dnsName: "internal-gpu-alb-1.us-east-1.elb.amazonaws.com",
        port: 8080,
        healthCheck: { path: "/", intervalSeconds: 30, healthyThreshold: 5, unhealthyThreshold: 2, timeoutSeconds: 5 },
      });
    });

    it("gives no fleets for a recording without a group", () => {
      // Prepare, Act
      const fleets = fleetsFrom([loadBalancer(), listener(), targetGroup()]);
      // Assess
      expect(fleets).to.deep.equal([]);
    });

    describe("names the missing link", () => {
      const cases: Array<{ name: string; resources: () => RecordedResource[]; error: RegExp }> = [
        {
          name: "the group names no target group",
          resources: () => [loadBalancer(), listener(), targetGroup(), group({ targetGroupArns: [] })],
          error: /"gpu-fleet" .* has no target group in the recording/,
        },
        {
          name: "the group's target group is not recorded",
          resources: () => [loadBalancer(), listener(), group()],
          error: /"gpu-fleet" .* has no target group in the recording/,
        },
        {
          name: "no listener forwards to the target group",
          resources: () => [loadBalancer(), listener({ defaultActions: [{ type: "forward", targetGroupArn: "arn:other" }] }), targetGroup(), group()],
          error: /target group "gpu-tg" has no listener in the recording/,
        },
        {
          name: "the listener's load balancer is not recorded",
          resources: () => [listener(), targetGroup(), group()],
          error: /listener "gpu-listener" names no load balancer of the recording/,
        },
        {
          name: "the group has no maxSize",
          resources: () => [loadBalancer(), listener(), targetGroup(), group({ maxSize: undefined })],
          error: /has no maxSize in the recording/,
        },
        {
          name: "the listener has no port",
          resources: () => [loadBalancer(), listener({ port: undefined }), targetGroup(), group()],
          error: /"gpu-listener" .* has no port in the recording/,
        },
      ];
      for (const c of cases) {
        it(c.name, () => {
          // Prepare
          const resources = c.resources();
          // Act + Assess
          expect(() => fleetsFrom(resources)).to.throw(c.error);
        });
      }
    });
  });
});
