/**
 * How each AWS service the platform's code calls spells a request and an error on the wire, so
 * the fault proxy can name the call it faults and answer in the service's own protocol: the SDK
 * then raises the error class (and applies the retry rule) it would against AWS.
 *
 * Each service's protocol and error codes (SERVICE_PROTOCOLS) are botocore's models'
 * (.venv/…/botocore/data/<service>/<version>/service-2.json.gz).
 */
import type { IncomingHttpHeaders } from "node:http";

export type Protocol = "awsJson1_0" | "awsJson1_1" | "ec2" | "awsQuery" | "restJson1";

export interface ServiceErrorShape {
  code: string;
  status: number;
}

export interface ServiceProtocol {
  protocol: Protocol;
  /** `__type` prefix of a JSON-protocol error (the service's Smithy namespace), as AWS sends it. */
  typeNamespace?: string;
  /** SQS's JSON protocol keeps its query-era codes in `x-amzn-query-error`. */
  queryCompatible?: boolean;
  throttling: ServiceErrorShape;
  serverError: ServiceErrorShape;
}

export const SERVICE_PROTOCOLS: Record<string, ServiceProtocol> = {
  sqs: {
    protocol: "awsJson1_0",
    typeNamespace: "com.amazonaws.sqs",
    queryCompatible: true,
    throttling: { code: "RequestThrottled", status: 400 },
    serverError: { code: "InternalError", status: 500 },
  },
  dynamodb: {
    protocol: "awsJson1_0",
    typeNamespace: "com.amazonaws.dynamodb.v20120810",
    throttling: { code: "ThrottlingException", status: 400 },
    serverError: { code: "InternalServerError", status: 500 },
  },
  ssm: { protocol: "awsJson1_1", throttling: { code: "ThrottlingException", status: 400 }, serverError: { code: "InternalServerError", status: 500 } },
  // ECS's model has no throttling error: the SDK classifies ThrottlingException by its name.
  ecs: { protocol: "awsJson1_1", throttling: { code: "ThrottlingException", status: 400 }, serverError: { code: "ServerException", status: 500 } },
  ec2: { protocol: "ec2", throttling: { code: "RequestLimitExceeded", status: 503 }, serverError: { code: "InternalError", status: 500 } },
  scheduler: { protocol: "restJson1", throttling: { code: "ThrottlingException", status: 429 }, serverError: { code: "InternalServerException", status: 500 } },
  sns: { protocol: "awsQuery", throttling: { code: "Throttled", status: 429 }, serverError: { code: "InternalError", status: 500 } },
};

/** `X-Amz-Target` prefixes, for a request whose signature names no service. */
const TARGET_PREFIXES: Record<string, string> = {
  AmazonSQS: "sqs",
  DynamoDB_20120810: "dynamodb",
  AmazonSSM: "ssm",
  AmazonEC2ContainerServiceV20141113: "ecs",
};

/** The service a request is for: the SigV4 credential scope names it (`…/us-east-1/sqs/aws4_request`). */
export function serviceOf(headers: IncomingHttpHeaders): string {
  const auth = headers.authorization ?? "";
  const scope = /Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\/aws4_request/.exec(auth);
  if (scope?.[1]) return scope[1];
  const target = headers["x-amz-target"];
  if (typeof target === "string") return TARGET_PREFIXES[target.split(".")[0] ?? ""] ?? "unknown";
  return "unknown";
}

/** The operation: the JSON protocols' target, the query protocols' Action, else method and path. */
export function operationOf(headers: IncomingHttpHeaders, method: string, url: string, body: string): string {
  const target = headers["x-amz-target"];
  if (typeof target === "string") return target.split(".").at(-1) ?? target;
  const contentType = String(headers["content-type"] ?? "");
  if (contentType.startsWith("application/x-www-form-urlencoded")) return new URLSearchParams(body).get("Action") ?? "unknown";
  return `${method} ${url.split("?")[0]}`;
}

export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An error answer in the service's own protocol, as AWS would send it. */
export function errorResponse(service: string, kind: "throttling" | "serverError", message: string, requestId: string): ErrorResponse {
  const spec = SERVICE_PROTOCOLS[service] ?? SERVICE_PROTOCOLS.dynamodb!;
  const { code, status } = spec[kind];
  const sender = status < 500 ? "Sender" : "Receiver";
  const common = { "x-amzn-requestid": requestId };
  switch (spec.protocol) {
    case "awsJson1_0":
    case "awsJson1_1": {
      const type = spec.typeNamespace ? `${spec.typeNamespace}#${code}` : code;
      return {
        status,
        headers: {
          ...common,
          "content-type": `application/x-amz-json-${spec.protocol === "awsJson1_0" ? "1.0" : "1.1"}`,
          ...(spec.queryCompatible ? { "x-amzn-query-error": `${code};${sender}` } : {}),
        },
        body: JSON.stringify({ __type: type, message }),
      };
    }
    case "restJson1":
      return { status, headers: { ...common, "content-type": "application/json", "x-amzn-errortype": code }, body: JSON.stringify({ message }) };
    case "ec2":
      return {
        status,
        headers: { "content-type": "text/xml;charset=UTF-8" },
        body: `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error></Errors><RequestID>${requestId}</RequestID></Response>`,
      };
    case "awsQuery":
      return {
        status,
        headers: { ...common, "content-type": "text/xml" },
        body: `<ErrorResponse><Error><Type>${sender}</Type><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
      };
  }
}

function xmlEscape(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", "'": "&apos;", '"': "&quot;" })[c] ?? c);
}
