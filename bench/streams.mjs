// `npm run bench:streams`: the streams part of `npm run bench` alone
// (bench/lib/streams.mjs) — messages per second through the gateway against
// a direct connection, and the gateway isolate's heap per open stream with
// 1,000 open. About a minute. `-- --quick` shortens it (figures not for
// publishing; writes bench/results/streams-quick.json).
import { runStandalone } from "./lib/standalone.mjs";
import { benchStreams, STREAMS_SETTINGS, streamsSummary } from "./lib/streams.mjs";

await runStandalone({
  title: "streams",
  key: "streams",
  run: ({ quick, ...rest }) => benchStreams({ ...rest, settings: quick ? STREAMS_SETTINGS.quick : STREAMS_SETTINGS.full }),
  summary: streamsSummary,
});
