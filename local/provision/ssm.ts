/**
 * SSM: parameters, put into moto; and the `aws.ssm.getParameter` data source, whose "latest AMI"
 * parameters are answered with an AMI moto knows.
 */
import { PutParameterCommand, type ParameterType } from "@aws-sdk/client-ssm";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type CallAnswer, type ProvisionContext, type Provisioners, type Result } from "./context";
import { keyValueTags, str, type Inputs } from "./inputs";

async function parameter(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.ssm.send(
    new PutParameterCommand({
      Name: name,
      Value: str(inputs, "value") ?? String(inputs.value ?? ""),
      Type: (str(inputs, "type") ?? "String") as ParameterType,
      Description: str(inputs, "description"),
      Tags: keyValueTags(inputs),
    }),
  );
  return {
    id: name,
    state: {
      ...inputs,
      name,
      version: created.Version ?? 1,
      arn: `arn:aws:ssm:${ctx.region}:${ctx.account}:parameter${name.startsWith("/") ? "" : "/"}${name}`,
    },
  };
}

const getParameter: CallAnswer = async (ctx, args) => {
  const name = String((args.inputs as Inputs).name);
  const value = await ctx.motoAmi();
  return {
    ...(args.inputs as Inputs),
    id: name,
    name,
    arn: `arn:aws:ssm:${ctx.region}::parameter${name}`,
    type: "String",
    value,
    insecureValue: value,
    version: 1,
  };
};

export const ssmProvisioners: Provisioners = {
  "aws:ssm/parameter:Parameter": creates(parameter),
};

/** Provider functions answered from moto, by token; the rest go to the offline plan's mocks. */
export const ssmCalls: Record<string, CallAnswer> = {
  "aws:ssm/getParameter:getParameter": getParameter,
};
