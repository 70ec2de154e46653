/**
 * The seams shared by the program, the functions, the pack and the local runtime. Dependency-free:
 * see README.md for why it lives inside the policy pack.
 */
export * from "./product";
export * from "./tags";
export * from "./fargate";
export * from "./patterns";
export * from "./tables";
export * from "./grants";
export * from "./sqs";
export * from "./fleet";
export * from "./env";
export * from "./declarations";
