/** DynamoDB: tables with their keys, indexes, stream and TTL; answered with moto's ARNs. */
import {
  CreateTableCommand,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
  type CreateTableCommandInput,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  type LocalSecondaryIndex,
  type Projection,
} from "@aws-sdk/client-dynamodb";
import { physicalName } from "../../plan/mocks";
import { creates, type Args, type ProvisionContext, type Provisioners, type Result } from "./context";
import { bool, definedOnly, keyValueTags, num, obj, objs, str, strs, type Inputs } from "./inputs";

async function table(ctx: ProvisionContext, args: Args, inputs: Inputs): Promise<Result> {
  const name = physicalName(args);
  const created = await ctx.ddb.send(new CreateTableCommand(createTableInput(name, inputs)));
  const ttl = obj(inputs, "ttl");
  if (ttl && bool(ttl, "enabled") && str(ttl, "attributeName")) {
    await ctx.ddb.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { Enabled: true, AttributeName: str(ttl, "attributeName") } }));
  }
  const description = created.TableDescription;
  return {
    id: name,
    state: {
      ...inputs,
      name,
      arn: description?.TableArn ?? `arn:aws:dynamodb:${ctx.region}:${ctx.account}:table/${name}`,
      streamArn: description?.LatestStreamArn ?? "",
    },
  };
}

function createTableInput(name: string, inputs: Inputs): CreateTableCommandInput {
  const provisioned = str(inputs, "billingMode") === "PROVISIONED";
  const throughput = (o: Inputs) =>
    provisioned ? { ProvisionedThroughput: { ReadCapacityUnits: num(o, "readCapacity") ?? 1, WriteCapacityUnits: num(o, "writeCapacity") ?? 1 } } : {};
  const gsis: GlobalSecondaryIndex[] = objs(inputs, "globalSecondaryIndexes").map((g) => ({
    IndexName: str(g, "name"),
    KeySchema: keySchema(g),
    Projection: projection(g),
    ...throughput(g),
  }));
  const lsis: LocalSecondaryIndex[] = objs(inputs, "localSecondaryIndexes").map((l) => ({
    IndexName: str(l, "name"),
    // A local index shares the table's hash key.
    KeySchema: keySchema({ hashKey: inputs.hashKey, rangeKey: l.rangeKey }),
    Projection: projection(l),
  }));
  const stream = bool(inputs, "streamEnabled")
    ? { StreamSpecification: { StreamEnabled: true, StreamViewType: str(inputs, "streamViewType") as "NEW_AND_OLD_IMAGES" } }
    : {};
  return {
    TableName: name,
    AttributeDefinitions: objs(inputs, "attributes").map(
      (a): AttributeDefinition => ({ AttributeName: str(a, "name"), AttributeType: str(a, "type") as AttributeDefinition["AttributeType"] }),
    ),
    KeySchema: keySchema(inputs),
    BillingMode: provisioned ? "PROVISIONED" : "PAY_PER_REQUEST",
    ...throughput(inputs),
    ...(gsis.length ? { GlobalSecondaryIndexes: gsis } : {}),
    ...(lsis.length ? { LocalSecondaryIndexes: lsis } : {}),
    ...stream,
    ...(obj(inputs, "serverSideEncryption")?.enabled === true ? { SSESpecification: { Enabled: true } } : {}),
    Tags: keyValueTags(inputs),
  };
}

/** A table's or an index's `hashKey`/`rangeKey`. */
function keySchema(o: Inputs): KeySchemaElement[] {
  return [
    { AttributeName: str(o, "hashKey"), KeyType: "HASH" },
    ...(str(o, "rangeKey") ? [{ AttributeName: str(o, "rangeKey"), KeyType: "RANGE" as const }] : []),
  ];
}

function projection(o: Inputs): Projection {
  return definedOnly({
    ProjectionType: (str(o, "projectionType") ?? "ALL") as Projection["ProjectionType"],
    NonKeyAttributes: strs(o, "nonKeyAttributes").length ? strs(o, "nonKeyAttributes") : undefined,
  });
}

export const dynamodbProvisioners: Provisioners = {
  "aws:dynamodb/table:Table": creates(table),
};
