import { expect } from "chai";
import { CLAIM_IAM_ACTIONS, REFILL_ROLE_ACTIONS } from "../../../functions/pool/iam";
import { allowedActions, type Statement } from "../../../infra/iam/document";
import { poolStatements } from "../../../infra/parts/pool";

const refillStatements = (a: Parameters<typeof poolStatements>[0]) => poolStatements(a).refill;
const claimStatements = (a: Parameters<typeof poolStatements>[0]) => poolStatements(a).claim;
import { allowStatements, unscopedLaunchGrant } from "../../../policy/rules/ec2-launch-grants-scoped";

describe("pool IAM statements", () => {
  const args = {
    region: "us-east-1",
    accountId: "123456789012",
    instanceTypes: ["g5.xlarge", "g6.xlarge", "g5.xlarge"],
    poolTag: "encache-warm-pool-dev",
    tableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/pool-claims",
    poolQueueArns: ["arn:aws:sqs:us-east-1:123456789012:pool-gpu-small"],
    refillDlqArn: "arn:aws:sqs:us-east-1:123456789012:pool-refill-dlq",
    launchTemplateArns: ["arn:aws:ec2:us-east-1:123456789012:launch-template/lt-1"],
    subnetId: "subnet-1",
    securityGroupArn: "arn:aws:ec2:us-east-1:123456789012:security-group/sg-1",
    instanceRoleArn: "arn:aws:iam::123456789012:role/pool-instance-role",
    hasSpotClass: true,
    amiParameters: [
      "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
      "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
    ],
  };
  const bySid = (statements: Statement[], sid: string) => statements.find((s) => s.Sid === sid);

  it("the refill role grants exactly the refill code's actions plus those RunInstances implies", () => {
    expect(allowedActions(refillStatements(args))).to.deep.equal([...REFILL_ROLE_ACTIONS].sort());
  });

  it("the claim policy grants exactly the claim API's actions", () => {
    expect(allowedActions(claimStatements(args))).to.deep.equal([...CLAIM_IAM_ACTIONS].sort());
  });

  it("conditions StartInstances and the created resources of RunInstances on the pool tag", () => {
    const s = refillStatements(args);
    expect(bySid(s, "StartPoolInstances")?.Condition).to.deep.equal({ StringEquals: { "aws:ResourceTag/encache:pool": "encache-warm-pool-dev" } });
    expect(bySid(s, "RunTaggedPoolInstances")?.Condition).to.deep.equal({
      StringEquals: { "aws:RequestTag/encache:pool": "encache-warm-pool-dev", "ec2:InstanceType": ["g5.xlarge", "g6.xlarge"] },
      ArnLike: { "ec2:LaunchTemplate": args.launchTemplateArns },
    });
    expect(bySid(s, "RunTaggedPoolAttachments")?.Condition).to.deep.equal({
      StringEquals: { "aws:RequestTag/encache:pool": "encache-warm-pool-dev" },
      ArnLike: { "ec2:LaunchTemplate": args.launchTemplateArns },
    });
    // Tagging at launch is allowed only as part of RunInstances, and only with the pool tag in the request.
    expect(bySid(s, "TagOnLaunch")?.Condition).to.deep.equal({
      StringEquals: { "ec2:CreateAction": "RunInstances", "aws:RequestTag/encache:pool": "encache-warm-pool-dev" },
    });
  });

  it("launches only through the pool's own launch templates: every RunInstances grant carries ec2:LaunchTemplate", () => {
    const runs = refillStatements(args).filter((s) => s.Action.includes("ec2:RunInstances"));
    expect(runs.map((s) => s.Sid)).to.deep.equal(["RunTaggedPoolInstances", "RunTaggedPoolAttachments", "RunFromPoolTemplates", "RunSpotRequests"]);
    for (const s of runs) expect(s.Condition?.ArnLike, s.Sid).to.deep.equal({ "ec2:LaunchTemplate": args.launchTemplateArns });
  });

  it("holds the images, subnet, group and template RunInstances uses to the template's own (no AMI override)", () => {
    expect(bySid(refillStatements(args), "RunFromPoolTemplates")?.Condition).to.deep.equal({
      ArnLike: { "ec2:LaunchTemplate": args.launchTemplateArns },
      Bool: { "ec2:IsLaunchTemplateResource": "true" },
    });
  });

  it("names the account in every EC2 ARN (an image's ARN has none: AMIs belong to no account of ours)", () => {
    const arns = [...refillStatements(args), ...claimStatements(args)]
      .flatMap((s) => [s.Resource].flat())
      .map(String)
      .filter((a) => a.startsWith("arn:aws:ec2:"));
    expect(arns.filter((a) => a.split(":")[4] !== "123456789012")).to.deep.equal(["arn:aws:ec2:us-east-1::image/*"]);
  });

  it("passes only the instance role, and only to EC2", () => {
    const pass = bySid(refillStatements(args), "PassInstanceRole");
    expect(pass).to.deep.include({ Resource: args.instanceRoleArn, Condition: { StringEquals: { "iam:PassedToService": "ec2.amazonaws.com" } } });
  });

  it("every launch grant passes the ec2-launch-grants-scoped rule's own check", () => {
    for (const statements of [refillStatements(args), claimStatements(args)]) {
      const problems = allowStatements({ Statement: statements })
        .map(unscopedLaunchGrant)
        .filter((p) => p !== null);
      expect(problems).to.deep.equal([]);
    }
  });

  it("lets RunInstances create the Spot request of a Spot class, and declares it only when a class is Spot", () => {
    // Act
    const withSpot = bySid(refillStatements(args), "RunSpotRequests");
    const withoutSpot = bySid(refillStatements({ ...args, hasSpotClass: false }), "RunSpotRequests");

    // Assess
    expect(withSpot).to.deep.include({ Action: ["ec2:RunInstances"], Resource: "arn:aws:ec2:us-east-1:123456789012:spot-instances-request/*" });
    expect(withoutSpot).to.equal(undefined);
  });

  it("lets RunInstances read the public AMI parameters the templates resolve at launch, and no other parameter", () => {
    // Act
    const resolve = bySid(refillStatements(args), "ResolveTemplateAmi");

    // Assess: one ARN per distinct parameter, with the empty account of a public parameter.
    expect(resolve).to.deep.include({
      Action: ["ssm:GetParameters"],
      Resource: ["arn:aws:ssm:us-east-1::parameter/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"],
    });
  });
});
