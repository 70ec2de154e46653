/**
 * What the pack's rules read, and the program writes: marker tags, declared documents, SQS's
 * facts and the product's name. Dependency-free: see README.md for why it lives inside the pack.
 */
export * from "./product";
export * from "./tags";
export * from "./sqs";
export * from "./declarations";
