// Global setup of the e2e project: one gateway (wrangler dev, fresh D1, the
// recording origin) for every e2e test file, stopped when the run ends, also
// when it fails. Tests read it with `gateway()` from ./fixture.ts.
import type { TestProject } from "vitest/node";
import { type GatewayInfo, startGateway } from "./gateway";

export default async function setup(project: TestProject) {
  const running = await startGateway();
  console.log(`e2e: gateway up on ${running.gatewayUrl} in ${(running.startupMs / 1000).toFixed(1)} s`);
  const info: GatewayInfo = {
    gatewayUrl: running.gatewayUrl,
    adminToken: running.adminToken,
    auditorToken: running.auditorToken,
    originUrl: running.originUrl,
    stateDir: running.stateDir,
  };
  project.provide("gateway", info);
  return async () => {
    await running.stop();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    gateway: GatewayInfo;
  }
}
