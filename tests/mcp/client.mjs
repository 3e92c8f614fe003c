// Acceptance test of `slowburn mcp` with the official MCP client: the
// TypeScript SDK's Client over its StdioClientTransport (which spawns the
// server), then raw lines on a second server's stdin for what a
// well-behaved client never sends. Run by tests/scenario/mcp_scenario_test.cpp
// on a running MPI job with one slowed rank; by hand:
//
//   SLOWBURN=build/slowburn SLOWBURN_PIDS=4242,4243 SLOWBURN_SLOW_RANK=2 node tests/mcp/client.mjs
//
// Environment: SLOWBURN (the binary), SLOWBURN_NODE_DIR (where `make deps`
// installed the SDK: build/node), SLOWBURN_PIDS (the job's rank pids, comma
// separated), SLOWBURN_SLOW_RANK (the rank the trace must name),
// SLOWBURN_TRACE_S (seconds to trace, default 4), SLOWBURN_RECORDING (a
// recording for analyze; without it analyze is called on a missing path and
// must answer a tool error).
//
// Prints one JSON object (the summary) on stdout; exits 0 when every check
// held, 1 otherwise (each failed check is listed in "failures").
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const binary = process.env.SLOWBURN ?? path.join(root, 'build/slowburn');
const nodeDir = process.env.SLOWBURN_NODE_DIR ?? path.join(root, 'build/node');
const pids = (process.env.SLOWBURN_PIDS ?? '').split(',').filter(Boolean).map(Number);
const slowRank = process.env.SLOWBURN_SLOW_RANK === undefined ? null : Number(process.env.SLOWBURN_SLOW_RANK);
const traceSeconds = Number(process.env.SLOWBURN_TRACE_S ?? 4);
const recording = process.env.SLOWBURN_RECORDING ?? null;

// The SDK lives in the build directory, not beside this script: its ESM
// entry points, from the package's own exports map.
const sdkDir = path.join(nodeDir, 'node_modules/@modelcontextprotocol/sdk');
const sdkPackage = JSON.parse(readFileSync(path.join(sdkDir, 'package.json'), 'utf8'));
const entry = (subpath) => {
  const exact = sdkPackage.exports[`./${subpath}`];
  const target = exact ? exact.import : sdkPackage.exports['./*'].import.replace('*', subpath);
  return pathToFileURL(path.join(sdkDir, target)).href;
};
const { Client } = await import(entry('client'));
const { StdioClientTransport } = await import(entry('client/stdio.js'));
const { McpError, ErrorCode } = await import(entry('types.js'));

const summary = { sdk_version: sdkPackage.version, failures: [] };
const check = (ok, what) => {
  if (!ok) summary.failures.push(what);
  return ok;
};

// ---------------------------------------------------------------- part 1: the SDK's client
async function withSdkClient() {
  const transport = new StdioClientTransport({ command: binary, args: ['mcp'], stderr: 'pipe' });
  let serverLog = '';
  transport.stderr.on('data', (chunk) => (serverLog += chunk));
  const client = new Client({ name: 'slowburn-acceptance', version: '1.0.0' });
  await client.connect(transport);
  summary.server = client.getServerVersion();
  summary.capabilities = client.getServerCapabilities();
  check(summary.server?.name === 'slowburn', 'serverInfo.name is slowburn');
  check(summary.capabilities?.tools !== undefined, 'capabilities.tools');
  check(typeof client.getInstructions() === 'string', 'instructions');
  await client.ping();

  const { tools } = await client.listTools();  // caches each tool's outputSchema validator
  summary.tools = tools.map((t) => t.name);
  for (const name of ['check', 'ranks', 'trace', 'stacks', 'events', 'health', 'investigate', 'analyze'])
    check(summary.tools.includes(name), `tools/list has ${name}`);
  for (const t of tools) {
    check(t.inputSchema?.type === 'object' && t.outputSchema?.type === 'object', `${t.name}: object schemas`);
    // The SDK compiled the outputSchema (Ajv) and will hold results to it: an empty object does not pass.
    const validator = client.getToolOutputValidator(t.name);
    check(typeof validator === 'function', `${t.name}: the SDK holds its results to the outputSchema`);
    if (typeof validator === 'function')
      check(validator({}).valid === false, `${t.name}: an empty result would be refused`);
  }

  // Each tool called: callTool validates structuredContent against the listed
  // outputSchema (and throws when it does not hold), so a result here is a valid one.
  const calls = {};
  const callTool = async (name, args) => {
    const started = Date.now();
    try {
      const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
      const text = result.content?.[0]?.text ?? '';
      calls[name] = {
        is_error: result.isError === true,
        validated: !result.isError && result.structuredContent !== undefined,
        text_is_same_json: !result.isError && JSON.stringify(JSON.parse(text)) === JSON.stringify(result.structuredContent),
        seconds: (Date.now() - started) / 1000,
      };
      if (result.isError) calls[name].message = text;
      return result;
    } catch (error) {
      calls[name] = { threw: String(error), code: error.code ?? null };
      return null;
    }
  };

  const ranks = await callTool('ranks', {});
  const found = ranks?.structuredContent?.ranks ?? [];
  summary.ranks_found = found.filter((r) => pids.includes(r.pid)).map((r) => r.rank).sort();
  check(calls.ranks?.validated === true, 'ranks: a valid structured result');
  check(pids.length === 0 || summary.ranks_found.length === pids.length, 'ranks: every pid of the job is a rank');

  const trace = await callTool('trace', { duration_s: traceSeconds, pids, probes: ['mpi.*'] });
  check(calls.trace?.validated === true, 'trace: a valid structured result');
  if (trace?.structuredContent) {
    const out = trace.structuredContent;
    summary.verdict_judged = out.verdict.judged;
    summary.stragglers = out.verdict.stragglers.map((f) => f.rank);
    summary.findings = out.findings.map((f) => ({ type: f.type, rank: f.rank }));
    summary.rank_rows = out.ranks.map((r) => ({ rank: r.rank, calls: r.calls, straggler: r.straggler }));
    summary.straggler_summary = out.verdict.stragglers[0]?.summary ?? null;
    if (slowRank !== null) {
      check(summary.stragglers.length === 1 && summary.stragglers[0] === slowRank, `trace names rank ${slowRank} alone`);
      check(out.ranks.some((r) => r.rank === slowRank && r.straggler), 'trace: the slowed rank\'s row says straggler');
    }
  }

  // A running job: a snapshot of every rank; nobody is stuck.
  const stacks = await callTool('stacks', { pids, samples: 2, interval_s: 0.2 });
  check(calls.stacks?.validated === true, 'stacks: a valid structured result');
  summary.stacks_ranks = (stacks?.structuredContent?.stacks ?? []).map((s) => s.rank).sort();

  const checked = await callTool('check', {});
  check(calls.check?.validated === true, 'check: a valid structured result');
  summary.can_trace = checked?.structuredContent?.can_trace ?? null;
  await callTool('events', { duration_s: 1 });
  check(calls.events?.validated === true, 'events: a valid structured result');
  await callTool('health', { interval_s: 0.5 });
  check(calls.health?.validated === true, 'health: a valid structured result');
  if (recording) {
    const analyzed = await callTool('analyze', { paths: [recording] });
    check(calls.analyze?.validated === true, 'analyze: a valid structured result');
    summary.analyze_stragglers = analyzed?.structuredContent?.verdict.stragglers.map((f) => f.rank) ?? null;
    const investigated = await callTool('investigate', { from: [recording] });
    check(calls.investigate?.validated === true, 'investigate: a valid structured result');
    const graph = investigated?.structuredContent?.graph;
    summary.investigate_first_edge = graph?.edges?.[0] ? `${graph.edges[0].from} -> ${graph.edges[0].to}` : null;
    summary.investigate_layers = investigated?.structuredContent?.layers?.map((l) => `${l.layer}:${l.state}`) ?? null;
  } else {
    await callTool('analyze', { paths: ['/nonexistent/recordings'] });
    check(calls.analyze?.is_error === true, 'analyze on a missing path: a tool error');
  }
  summary.calls = calls;

  // Errors, and the server lives on after each.
  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
    summary.unknown_tool = { threw: false };
  } catch (error) {
    summary.unknown_tool = { code: error.code ?? null, message: error.message };
  }
  check(summary.unknown_tool.code === ErrorCode.InvalidParams, 'unknown tool: -32602');
  const tooLong = await client.callTool({ name: 'trace', arguments: { duration_s: 3600 } });
  summary.bad_arguments = { is_error: tooLong.isError === true, message: tooLong.content?.[0]?.text };
  check(summary.bad_arguments.is_error, 'trace for 3600 s: a tool error');
  try {
    await client.request({ method: 'no/such/method', params: {} }, (await import(entry('types.js'))).EmptyResultSchema);
    summary.unknown_method = { threw: false };
  } catch (error) {
    summary.unknown_method = { code: error.code ?? null };
  }
  check(summary.unknown_method.code === ErrorCode.MethodNotFound, 'unknown method: -32601');
  await client.ping();
  const again = await client.callTool({ name: 'ranks', arguments: {} });
  check(again.isError !== true, 'the server answers after the errors');
  summary.alive_after_errors = true;
  await client.close();
  summary.server_log_lines = serverLog.split('\n').filter(Boolean).length;
  check(McpError !== undefined, 'the SDK exports McpError');
}

// ---------------------------------------------------------------- part 2: raw lines
// What the SDK never sends: malformed JSON, a batch, versions it does not speak.
async function withRawLines() {
  const child = spawn(binary, ['mcp'], { stdio: ['pipe', 'pipe', 'pipe'] });
  const answers = [];
  const stray = [];  // stdout lines that are not JSON-RPC messages
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (line) => {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      stray.push(line);
      return;
    }
    if (message.jsonrpc !== '2.0') stray.push(line);
    answers.push(message);
    waiting.shift()?.(message);
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const send = (text) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${text}`)), 30000);
      waiting.push((m) => (clearTimeout(timer), resolve(m)));
      child.stdin.write(text + '\n');
    });
  const raw = {};
  raw.parse_error = await send('{"jsonrpc":"2.0","id":1,"method":"tools/list"');  // cut short
  check(raw.parse_error.error?.code === -32700 && raw.parse_error.id === null, 'malformed JSON: -32700, id null');
  child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');  // no answer expected
  raw.old_version = await send(
    '{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},' +
      '"clientInfo":{"name":"raw","version":"0"}}}');
  check(raw.old_version.id === 2 && raw.old_version.result?.protocolVersion === '2024-11-05', '2024-11-05 answered as such');
  raw.future_version = await send(
    '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},' +
      '"clientInfo":{"name":"raw","version":"0"}}}');
  check(raw.future_version.result?.protocolVersion === '2025-11-25', 'an unknown version answered with the latest');
  raw.unknown_method = await send('{"jsonrpc":"2.0","id":4,"method":"resources/list"}');
  check(raw.unknown_method.error?.code === -32601 && raw.unknown_method.id === 4, 'unknown method: -32601');
  raw.unknown_tool = await send('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}');
  check(raw.unknown_tool.error?.code === -32602, 'unknown tool: -32602');
  raw.batch = await send('[{"jsonrpc":"2.0","id":6,"method":"ping"}]');
  check(raw.batch.error?.code === -32600, 'a batch: -32600');
  raw.discover = await send('{"jsonrpc":"2.0","id":7,"method":"server/discover"}');
  check(raw.discover.result?.tools?.length === summary.tools?.length, 'server/discover lists the tools');
  raw.ping = await send('{"jsonrpc":"2.0","id":8,"method":"ping"}');
  check(raw.ping.id === 8 && JSON.stringify(raw.ping.result) === '{}', 'ping after the errors');
  child.stdin.end();
  const end = await exited;
  summary.raw = {
    parse_error: raw.parse_error.error,
    unknown_method: raw.unknown_method.error,
    unknown_tool: raw.unknown_tool.error,
    batch: raw.batch.error,
    answers: answers.length,
    stray_stdout_lines: stray,
    exit: end,
  };
  check(answers.length === 8, 'one answer per request, none to the notification');
  check(stray.length === 0, 'stdout carries JSON-RPC messages only');
  check(end.code === 0, 'exits 0 at the end of its input');
}

try {
  await withSdkClient();
  await withRawLines();
} catch (error) {
  summary.failures.push(`threw: ${error.stack ?? error}`);
}
summary.ok = summary.failures.length === 0;
process.stdout.write(JSON.stringify(summary) + '\n');
process.exit(summary.ok ? 0 : 1);
