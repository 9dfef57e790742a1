// The isolate's one limiter table: fixed size (limiter.max_memory_mib), shared
// by every subject and category, created on first use. Module state is allowed
// here because it is bounded by construction.
import { LimiterTable } from "../engine/limiter-table";

let table: LimiterTable | null = null;
let tableMib = 0;

export function limiterTable(maxMemoryMib: number): LimiterTable {
  if (table === null || tableMib !== maxMemoryMib) {
    table = new LimiterTable(maxMemoryMib);
    tableMib = maxMemoryMib;
  }
  return table;
}
