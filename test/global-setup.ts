// Starts the recording origin (scripts/origin.mjs) on 127.0.0.1 for the whole
// run, and hands its port to the Workers pool through `provide`.
import type { TestProject } from "vitest/node";
// @ts-expect-error -- plain .mjs script shared with `npm start`
import { startOrigin } from "../scripts/origin.mjs";

export default async function setup(project: TestProject) {
  const origin = (await startOrigin({ port: 0 })) as { port: number; close: () => Promise<void> };
  project.provide("originPort", origin.port);
  return async () => {
    await origin.close();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    originPort: number;
  }
}
