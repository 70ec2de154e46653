/**
 * Mocha root-hook plugin (loaded with --require): one moto server for the whole run on a free
 * loopback port, with the AWS SDK pointed at it through AWS_ENDPOINT_URL. Tests call resetMoto().
 */
import { MotoServer, motoClientEnv } from "../../../local/aws/moto";

const moto = new MotoServer();

export function motoEndpoint(): string {
  if (!moto.endpoint) throw new Error("moto is not running: load test/integration/helpers/moto.ts with --require");
  return moto.endpoint;
}

/** Clears every service's state, so each test starts from an empty account. */
export async function resetMoto(): Promise<void> {
  motoEndpoint();
  await moto.reset();
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(120_000);
    await moto.start();
    Object.assign(process.env, motoClientEnv(moto.endpoint, "us-east-1"));
    delete process.env.AWS_PROFILE;
    delete process.env.AWS_SESSION_TOKEN;
  },

  async afterAll(): Promise<void> {
    await moto.stop();
  },
};
