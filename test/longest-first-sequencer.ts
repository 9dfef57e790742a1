// Orders the test files: the e2e projects' files first (both "e2e" and
// "e2e-d1", longest first by the last run's duration, files never run before
// first, else the larger file), then the Node projects', then the workers
// project's. Vitest's own order sorts by project name, which put the e2e-d1
// file (~40 s) after every e2e file, on the critical path; and interleaving
// the workers project's files with the e2e files (longest first across
// projects) made the pool start and stop workerd runners as the slots
// changed hands: up to 90 s more CPU on two cores.
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const RANK: Record<string, number> = { e2e: 0, "e2e-d1": 0, engine: 1, tooling: 1, workers: 2 };

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const entries = files.map((spec) => {
      const key = `${spec.project.name}:${relative(this.ctx.config.root, spec.moduleId)}`;
      return {
        spec,
        rank: RANK[spec.project.name] ?? 3,
        duration: this.ctx.cache.getFileTestResults(key)?.duration ?? Number.POSITIVE_INFINITY,
        size: this.ctx.cache.getFileStats(key)?.size ?? 0,
      };
    });
    entries.sort((a, b) => a.rank - b.rank || (a.duration !== b.duration ? (b.duration > a.duration ? 1 : -1) : b.size - a.size));
    return entries.map((entry) => entry.spec);
  }
}
