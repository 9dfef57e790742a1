// Issue 19 item 2: a promise rejection nobody handles fails the test file it
// happens in. workerd reports it as an `unhandledrejection` event on the
// global scope (and otherwise only prints "Uncaught (in promise)"), so each
// file's rejections are collected here and the file fails in afterAll,
// naming the error's class and message (test code only: no secrets here).
import { afterAll, afterEach, expect } from "vitest";

const seen: string[] = [];

addEventListener("unhandledrejection", (event: PromiseRejectionEvent) => {
  const reason: unknown = event.reason;
  seen.push(reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason));
});

afterEach(async () => {
  // Rejections are reported after a turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 0));
});

afterAll(() => {
  expect(seen, "unhandled promise rejections in this file").toEqual([]);
});
