/**
 * A tiny program for deployLocally's failure test: a queue moto accepts, then an inline policy
 * on a role that does not exist, which moto's IAM rejects (NoSuchEntity).
 */
import * as aws from "@pulumi/aws";

const queue = new aws.sqs.Queue("fixture-queue", {});
new aws.iam.RolePolicy("fixture-orphan-policy", {
  role: "no-such-role",
  policy: queue.arn.apply((arn) => JSON.stringify({ Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "sqs:SendMessage", Resource: arn }] })),
});
export const queueUrl = queue.url;
