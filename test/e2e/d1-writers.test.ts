// The e2e files that write the local D1 directly (`d1Execute`), run as one
// file by the "e2e-d1" project against a gateway of their own: one file, so
// they run one after another (a second writer beside another file's admin
// writes made the gateway's own D1 call meet SQLITE_BUSY) and still start
// alongside the other projects' files; a project limited to one file at a
// time would run only after every other file (vitest puts those last).
// Run one of them alone with `npx vitest run --project e2e-d1 -t <name>`.
import "./cli-reconcile.test";
import "./cli-traffic.test";
import "./console-traffic.test";
