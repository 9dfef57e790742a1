// Prints the run's closing line ("N passed, N failed") and its ten slowest
// test files, from vitest's JSON report: `node scripts/slowest-tests.mjs
// <report.json> [count]`. .ci/run calls it after `npm test`, so the files
// that dominate the suite's time show in every CI log.
import { readFileSync } from "node:fs";
import { relative } from "node:path";

const [reportPath, countArg] = process.argv.slice(2);
if (reportPath === undefined) {
  console.error("usage: node scripts/slowest-tests.mjs <vitest-report.json> [count]");
  process.exit(2);
}
const count = Number(countArg ?? 10);
const report = JSON.parse(readFileSync(reportPath, "utf8"));

const files = report.testResults
  .map((file) => ({ name: relative(process.cwd(), file.name), ms: Math.max(0, file.endTime - file.startTime), tests: file.assertionResults.length }))
  .sort((a, b) => b.ms - a.ms);
const wallMs = files.length === 0 ? 0 : Math.max(...report.testResults.map((f) => f.endTime)) - report.startTime;

console.log(`\nThe ${Math.min(count, files.length)} slowest of ${files.length} test files (wall time ${(wallMs / 1000).toFixed(1)} s):`);
for (const file of files.slice(0, count)) {
  console.log(`${(file.ms / 1000).toFixed(1).padStart(8)} s  ${String(file.tests).padStart(4)} tests  ${file.name}`);
}
console.log(`${report.numPassedTests} passed, ${report.numFailedTests} failed` + (report.numPendingTests ? `, ${report.numPendingTests} skipped` : ""));
